package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// HandlerJobPermit names the permit timeout in session history: the
// reservation of a member that waited too long for its gang is released.
const HandlerJobPermit domain.HandlerName = "JobPermit"

// jobCounts is what a job's state follows, counted over its members.
type jobCounts struct {
	members int
	live    int // not ended
	// holding are members placed and not ending (SCHEDULED to RUNNING):
	// what Permit counts against min-available.
	holding int
	// scheduled are members reserved but not yet let through Permit.
	scheduled []domain.Session
	// allocated are members that got a placement and kept it at least to
	// PREPARING or beyond, or hold one now; real are those past Permit.
	allocated int
	real      int
	failed    []domain.SessionID
}

func countMembers(members []domain.Session) jobCounts {
	var c jobCounts
	c.members = len(members)
	for _, m := range members {
		st := m.Status
		if !st.Terminal() {
			c.live++
		}
		if st.HoldsResources() && st != domain.SessionTerminating {
			c.holding++
		}
		switch {
		case st == domain.SessionScheduled:
			c.scheduled = append(c.scheduled, m)
			c.allocated++
		case st == domain.SessionPending:
		case st.Terminal() && m.Outcome == domain.OutcomeCancelled:
		default:
			c.allocated++
			c.real++
		}
		if st.Terminal() && m.Outcome == domain.OutcomeFailure {
			c.failed = append(c.failed, m.ID)
		}
	}
	return c
}

// permit drops from PrepareSessions' targets the job members whose gang
// has not reached min-available: they stay SCHEDULED, their slots held,
// until enough members are reserved or the permit timeout releases them
// (seed 004's Permit stage).
func (c *Coordinator) permit(ctx context.Context, targets []store.SessionWithKernels) ([]store.SessionWithKernels, error) {
	type gate struct {
		ok      bool
		checked bool
	}
	gates := map[domain.JobID]*gate{}
	out := targets[:0:0]
	for _, t := range targets {
		id := t.Session.Job
		if id == "" || t.Session.Status != domain.SessionScheduled {
			out = append(out, t)
			continue
		}
		g := gates[id]
		if g == nil {
			g = &gate{}
			gates[id] = g
		}
		if !g.checked {
			g.checked = true
			j, err := c.store.GetJob(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("permit: job %s: %w", id, err)
			}
			members, err := c.store.JobMembers(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("permit: members of %s: %w", id, err)
			}
			g.ok = countMembers(members).holding >= j.MinAvailable
		}
		if g.ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// ReconcileJobs moves every live job through seed 003's table
// (domain.JobTransitions) from what its members do, releases reservations
// that waited at Permit past the job's permit timeout, and ends the
// members of a failing job. Each move is guarded and recorded in the
// job's history; a job moved by another replica meanwhile is left for the
// next cycle.
func (c *Coordinator) ReconcileJobs(ctx context.Context) error {
	jobs, err := c.store.ListJobs(ctx, store.JobFilter{Live: true})
	if err != nil {
		return fmt.Errorf("jobs: list: %w", err)
	}
	var errs []error
	waiting, reservations := 0, 0
	for _, j := range jobs {
		if err := c.reconcileJob(ctx, j); err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", j.ID, err))
		}
		// The gauges count after the moves, from a fresh read.
		if members, err := c.store.JobMembers(ctx, j.ID); err == nil {
			n := countMembers(members)
			reservations += len(n.scheduled)
			if n.holding < j.MinAvailable {
				waiting += len(n.scheduled)
			}
		}
	}
	c.metrics.gang.permit(waiting, reservations)
	return errors.Join(errs...)
}

func (c *Coordinator) reconcileJob(ctx context.Context, j domain.Job) error {
	cfg := c.conf()
	// A few moves per cycle let a job catch up (NEW → ACCEPTED → STARTING
	// in one go) without looping on itself.
	for range 4 {
		members, err := c.store.JobMembers(ctx, j.ID)
		if err != nil {
			return err
		}
		n := countMembers(members)
		now := c.clock.Now()
		since := now.Sub(j.StateChangedAt)
		ev, why := domain.JobEvent(""), ""
		switch j.State {
		case domain.JobNew:
			if n.members > 0 {
				ev, why = domain.JobRun, "first member added"
			}
		case domain.JobAccepted, domain.JobStarting, domain.JobRunning:
			if j.FailurePolicy == domain.FailureFail && len(n.failed) > 0 {
				ev, why = domain.JobFail, fmt.Sprintf("member %s failed (failure_policy fail)", n.failed[0])
				break
			}
			released, err := c.permitTimeout(ctx, j, n, now)
			if err != nil {
				return err
			}
			if released > 0 {
				if j.FailurePolicy == domain.FailureFail && n.real == 0 {
					ev, why = domain.JobFail, fmt.Sprintf("permit timed out after %s with no real allocation", j.PermitTimeout)
					break
				}
				continue // counts changed: look again
			}
			switch {
			case j.State == domain.JobAccepted && n.allocated > 0:
				ev, why = domain.JobRun, "first allocation"
			case j.State == domain.JobStarting && n.allocated > 1:
				ev, why = domain.JobRun, fmt.Sprintf("%d allocations", n.allocated)
			case j.State == domain.JobStarting && since >= cfg.JobStartingTimeout:
				ev, why = domain.JobRun, fmt.Sprintf("starting timeout %s passed", cfg.JobStartingTimeout)
			case n.members > 0 && n.live == 0:
				ev, why = domain.JobComplete, "nothing pending or running"
			}
		case domain.JobCompleting:
			switch {
			case n.live > 0:
				ev, why = domain.JobRun, "a member is pending or running again"
			case since >= cfg.JobCompletingTimeout:
				ev, why = domain.JobComplete, fmt.Sprintf("completing timeout %s passed", cfg.JobCompletingTimeout)
			}
		case domain.JobCompleted:
			if since >= cfg.JobRetention {
				ev, why = domain.JobExpire, fmt.Sprintf("retention %s passed", cfg.JobRetention)
			}
		case domain.JobFailing:
			if n.live > 0 {
				return c.endMembers(ctx, j, members)
			}
			ev, why = domain.JobFail, "every member has ended"
		}
		if ev == "" {
			return nil
		}
		to, err := domain.NextJobState(ev, j.State)
		if err != nil {
			return err // a table gap is a bug worth seeing
		}
		e := domain.JobHistoryEntry{JobID: j.ID, At: now, Event: ev, From: j.State, To: to, Message: why}
		if err := c.store.MoveJob(ctx, e); err != nil {
			if errors.Is(err, store.ErrGuardFailed) {
				return nil
			}
			return err
		}
		c.log.Info("job moved", "job", j.ID, "event", ev, "from", j.State, "to", to, "why", why)
		j.State, j.StateChangedAt, j.StateReason = to, now, why
		if to.Final() {
			return nil
		}
	}
	return nil
}

// permitTimeout releases, all at once, every reservation of a job whose
// gang has not reached min-available within its permit timeout, counted
// from the oldest waiting member's placement. Releasing is a guarded move
// SCHEDULED → PENDING that gives the slots back, so running it twice (or on
// two replicas) releases once: Unreserve is idempotent.
func (c *Coordinator) permitTimeout(ctx context.Context, j domain.Job, n jobCounts, now time.Time) (int, error) {
	if len(n.scheduled) == 0 || n.holding >= j.MinAvailable {
		return 0, nil
	}
	oldest := n.scheduled[0].StatusChangedAt
	for _, m := range n.scheduled[1:] {
		if m.StatusChangedAt.Before(oldest) {
			oldest = m.StatusChangedAt
		}
	}
	if now.Sub(oldest) < j.PermitTimeout {
		return 0, nil
	}
	ids := make([]domain.SessionID, len(n.scheduled))
	for i, m := range n.scheduled {
		ids[i] = m.ID
	}
	reason := fmt.Sprintf("job %s: permit timed out after %s with %d of %d members reserved; reservations released",
		j.ID, j.PermitTimeout, n.holding, j.MinAvailable)
	moved, err := c.store.TransitionSessions(ctx, ids, []domain.SessionStatus{domain.SessionScheduled},
		domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}, reason, now)
	if err != nil {
		return 0, fmt.Errorf("permit timeout: %w", err)
	}
	hist := make([]domain.HistoryEntry, len(moved))
	for i, id := range moved {
		hist[i] = domain.HistoryEntry{SessionID: id, At: now, Handler: HandlerJobPermit, Result: domain.ResultExpired,
			From: domain.SessionScheduled, To: domain.SessionPending, Message: reason, Attempt: 1}
	}
	if err := c.store.AppendHistory(ctx, hist); err != nil {
		return 0, err
	}
	if len(moved) > 0 {
		c.log.Info("permit timed out", "job", j.ID, "released", len(moved))
		c.Mark()
	}
	return len(moved), nil
}

// endMembers ends every live member of a failing job, with the job's
// reason; the job becomes FAILED once none is left.
func (c *Coordinator) endMembers(ctx context.Context, j domain.Job, members []domain.Session) error {
	for _, m := range members {
		if m.Status.Terminal() || m.Status == domain.SessionTerminating {
			continue
		}
		reason := fmt.Sprintf("job %s failed: %s", j.ID, j.StateReason)
		if _, err := c.Terminate(ctx, m.ID, reason, false); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("end member %s: %w", m.ID, err)
		}
	}
	return nil
}
