package coordinator

import (
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// report is what a lifecycle handler said about one session.
type report uint8

const (
	// unreported: the handler did not take the session up (its kernels
	// left the handler's filter), or what it said is already applied (a
	// success that left the session in its status). Only the bound can
	// end the session.
	unreported report = iota
	succeeded
	failed
	skipped
)

// facts are everything the outcome for one session depends on, as values,
// so the rule can be tested and a decision replayed without a store.
type facts struct {
	Report report
	// Message is the failure's or the skip's.
	Message string
	// Transitions is the handler's row of seed 001's lifecycle table.
	Transitions domain.Transitions
	Policy      handlerPolicy
	// Applied: the handler made the success move itself (through the
	// store's guarded plan applier), so a success never stays in place.
	Applied bool
	// Status is 0 for a session the handler reported but did not target.
	Status          domain.SessionStatus
	StatusChangedAt time.Time
	Now             time.Time
	// Bound is how long Status may last in the session's group; 0 is
	// unbounded.
	Bound time.Duration
	// Tries counts the phase's failed attempts, this one included.
	Tries      int
	MaxRetries int
	// Impossible: the failure is one no retry can fix (ErrImpossible).
	Impossible bool
}

// decision is the outcome for one session, which apply carries out.
type decision struct {
	// Result is what history records; "" when nothing is recorded.
	Result domain.Result
	// To is the move to make; nil when the outcome changes no status. A
	// give-up or expiry may end elsewhere (leave sends a session that
	// cannot start over to TERMINATING).
	To      *domain.Transition
	Message string
	// InPlace: a success that leaves the session in its status (asking an
	// agent again for a pull under way) and moves at most its kernels. It
	// must not restart the residence clock, so the session is still
	// subject to its bound after the success is recorded.
	InPlace bool
}

// status is the session status the decision moves to; 0 when it stays.
func (d decision) status() domain.SessionStatus {
	if d.To == nil {
		return 0
	}
	return d.To.Session
}

// decide is seed 001's _handle_result as a rule over values: success → the
// table's success target; failure → GIVE_UP once the tries reach
// max_retries, else NEED_RETRY, except that an impossible failure gives up
// at once to CANCELLED (the seed's table has no such row: an agent refusing
// a spec is a refusal, not a fault); EXPIRED when the session stayed in its
// status past the bound; SKIPPED → history only.
//
// The bound is checked before retries and give-up, for every handler: a
// failed attempt past the bound expires, naming the failure, so neither a
// high max_retries nor a slow cycle stretches the bound. A success is not
// held to the bound, because it has just moved the session on.
func decide(f facts) decision {
	overstayed := f.Transitions.Expired != nil && f.Bound > 0 && f.Now.Sub(f.StatusChangedAt) > f.Bound
	expire := func(why string) decision {
		return decision{Result: domain.ResultExpired, To: clone(f.Transitions.Expired),
			Message: fmt.Sprintf("%s for longer than %s", f.Status, f.Bound) + why}
	}
	switch f.Report {
	case succeeded:
		tr := f.Transitions.Success
		switch {
		case tr == nil:
			return decision{Result: domain.ResultSuccess}
		case !f.Applied && f.Status != 0 && f.Status == tr.Session:
			d := decision{Result: domain.ResultSuccess, InPlace: true}
			if tr.Kernel != 0 {
				d.To = &domain.Transition{Kernel: tr.Kernel}
			}
			return d
		}
		return decision{Result: domain.ResultSuccess, To: clone(tr)}
	case failed:
		switch {
		case f.Impossible:
			// Before the bound: the refusal says more than the expiry would.
			return decision{Result: domain.ResultGiveUp,
				To:      &domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled},
				Message: "cannot start, retrying cannot help: " + f.Message}
		case overstayed:
			return expire("; last attempt failed: " + f.Message)
		case f.Policy.retryUntilExpiry:
			return decision{Result: domain.ResultNeedRetry,
				Message: fmt.Sprintf("attempt %d failed, retrying until the %s bound: %s", f.Tries, f.Status, f.Message)}
		case f.Tries < f.MaxRetries || f.Transitions.GiveUp == nil:
			return decision{Result: domain.ResultNeedRetry,
				Message: fmt.Sprintf("attempt %d of %d failed: %s", f.Tries, f.MaxRetries, f.Message)}
		}
		return decision{Result: domain.ResultGiveUp, To: clone(f.Transitions.GiveUp),
			Message: fmt.Sprintf("gave up after %d failed attempts: %s", f.Tries, f.Message)}
	case skipped:
		if overstayed {
			return expire("")
		}
		return decision{Result: domain.ResultSkipped, Message: f.Message}
	}
	if overstayed {
		return expire("")
	}
	return decision{}
}

// clone copies a table entry, so a decision never shares the handler's
// row with whoever holds it next.
func clone(tr *domain.Transition) *domain.Transition {
	if tr == nil {
		return nil
	}
	c := *tr
	return &c
}
