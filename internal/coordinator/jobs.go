package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// members of a failing job. It reads the live jobs with their members
// once, decides each job's steps as values (decideJob), and applies them
// in order, each guarded and recorded; a job moved by another replica
// meanwhile is left for the next pass.
func (c *Coordinator) ReconcileJobs(ctx context.Context) error {
	live, err := c.store.LiveJobs(ctx)
	if err != nil {
		return fmt.Errorf("jobs: list: %w", err)
	}
	cfg := c.conf()
	b := jobBounds{Starting: cfg.JobStartingTimeout, Completing: cfg.JobCompletingTimeout, Retention: cfg.JobRetention}
	now := c.clock.Now()
	var errs []error
	waiting, reservations := 0, 0
	for _, jm := range live {
		plan, err := decideJob(jm.Job, jm.Members, now, b)
		if err == nil {
			err = c.applyJob(ctx, plan)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", jm.Job.ID, err))
		}
		// The gauges count what the plan leaves, not a second read.
		reservations += len(plan.After.scheduled)
		if plan.After.holding < jm.Job.MinAvailable {
			waiting += len(plan.After.scheduled)
		}
	}
	c.metrics.gang.permit(waiting, reservations)
	return errors.Join(errs...)
}

// jobBounds are the job timeouts in force (Config's Job* fields).
type jobBounds struct {
	Starting, Completing, Retention time.Duration
}

// jobStep is one thing a pass does to a job. Exactly one of its parts is
// set.
type jobStep struct {
	// Move is a guarded job move, Move.From → Move.To.
	Move *domain.JobHistoryEntry
	// Release are the SCHEDULED members whose reservations the permit
	// timeout gives back (SCHEDULED → PENDING).
	Release []domain.SessionID
	// End are the live members of a failing job to terminate.
	End []domain.SessionID
	// Reason is the release's or the ends' reason.
	Reason string
}

// jobPlan is what decideJob says a pass does to one job: its steps, to be
// applied in order (a guarded move that fails stops the rest), and the
// member counts once they are applied.
type jobPlan struct {
	Job   domain.Job
	Steps []jobStep
	After jobCounts
}

// maxJobMoves bounds the moves of one pass: enough for a job to catch up
// (NEW → ACCEPTED → STARTING in one go) without looping on itself.
const maxJobMoves = 4

// decideJob is a job's pass as a rule over values: from the job and its
// members at now, the moves of seed 003's table it makes, the permit
// timeout's release and the ends of a failing job's members. It changes
// nothing; applyJob carries the plan out. An event the table has no row
// for is returned as an error: a table gap is a bug worth seeing.
func decideJob(j domain.Job, members []domain.Session, now time.Time, b jobBounds) (plan jobPlan, err error) {
	ms := slices.Clone(members)
	plan = jobPlan{Job: j}
	defer func() { plan.After = countMembers(ms) }()
	for range maxJobMoves {
		n := countMembers(ms)
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
			if ids := permitExpired(j, n, now); len(ids) > 0 {
				plan.Steps = append(plan.Steps, jobStep{Release: ids, Reason: fmt.Sprintf(
					"job %s: permit timed out after %s with %d of %d members reserved; reservations released",
					j.ID, j.PermitTimeout, n.holding, j.MinAvailable)})
				setStatus(ms, ids, domain.SessionPending, now)
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
			case j.State == domain.JobStarting && since >= b.Starting:
				ev, why = domain.JobRun, fmt.Sprintf("starting timeout %s passed", b.Starting)
			case n.members > 0 && n.live == 0:
				ev, why = domain.JobComplete, "nothing pending or running"
			}
		case domain.JobCompleting:
			switch {
			case n.live > 0:
				ev, why = domain.JobRun, "a member is pending or running again"
			case since >= b.Completing:
				ev, why = domain.JobComplete, fmt.Sprintf("completing timeout %s passed", b.Completing)
			}
		case domain.JobCompleted:
			if since >= b.Retention {
				ev, why = domain.JobExpire, fmt.Sprintf("retention %s passed", b.Retention)
			}
		case domain.JobFailing:
			if n.live > 0 {
				var ids []domain.SessionID
				for _, m := range ms {
					if !m.Status.Terminal() && m.Status != domain.SessionTerminating {
						ids = append(ids, m.ID)
					}
				}
				if len(ids) > 0 {
					plan.Steps = append(plan.Steps, jobStep{End: ids, Reason: fmt.Sprintf("job %s failed: %s", j.ID, j.StateReason)})
					setStatus(ms, ids, domain.SessionTerminating, now)
				}
				return plan, nil
			}
			ev, why = domain.JobFail, "every member has ended"
		}
		if ev == "" {
			return plan, nil
		}
		to, err := domain.NextJobState(ev, j.State)
		if err != nil {
			return plan, err
		}
		plan.Steps = append(plan.Steps, jobStep{Move: &domain.JobHistoryEntry{
			Subject: j.ID, At: now, Cause: ev, From: j.State, To: to, Message: why}})
		j.State, j.StateChangedAt, j.StateReason = to, now, why
		if to.Final() {
			return plan, nil
		}
	}
	return plan, nil
}

// setStatus moves the named members in the plan's copy, so the next look
// counts them where the step leaves them.
func setStatus(ms []domain.Session, ids []domain.SessionID, to domain.SessionStatus, now time.Time) {
	moved := make(map[domain.SessionID]bool, len(ids))
	for _, id := range ids {
		moved[id] = true
	}
	for i := range ms {
		if moved[ms[i].ID] {
			ms[i].Status, ms[i].StatusChangedAt = to, now
		}
	}
}

// permitExpired returns, all at once, the reserved members of a job whose
// gang has not reached min-available within its permit timeout, counted
// from the oldest waiting member's placement; nil while it may still wait.
func permitExpired(j domain.Job, n jobCounts, now time.Time) []domain.SessionID {
	if len(n.scheduled) == 0 || n.holding >= j.MinAvailable {
		return nil
	}
	oldest := n.scheduled[0].StatusChangedAt
	for _, m := range n.scheduled[1:] {
		if m.StatusChangedAt.Before(oldest) {
			oldest = m.StatusChangedAt
		}
	}
	if now.Sub(oldest) < j.PermitTimeout {
		return nil
	}
	ids := make([]domain.SessionID, len(n.scheduled))
	for i, m := range n.scheduled {
		ids[i] = m.ID
	}
	return ids
}

// applyJob carries out a plan's steps in order. A move whose guard fails
// (another replica moved the job) ends the pass for this job quietly.
func (c *Coordinator) applyJob(ctx context.Context, plan jobPlan) error {
	j := plan.Job
	for _, st := range plan.Steps {
		switch {
		case st.Move != nil:
			e := *st.Move
			if err := c.store.MoveJob(ctx, e); err != nil {
				if errors.Is(err, store.ErrGuardFailed) {
					return nil
				}
				return err
			}
			c.log.Info("job moved", "job", j.ID, "event", e.Cause, "from", e.From, "to", e.To, "why", e.Message)
		case len(st.Release) > 0:
			if err := c.releaseReservations(ctx, j, st.Release, st.Reason); err != nil {
				return err
			}
		case len(st.End) > 0:
			if err := c.endMembers(ctx, st.End, st.Reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// releaseReservations gives back the permit-timed-out reservations.
// Releasing is a guarded move SCHEDULED → PENDING that returns the slots,
// so running it twice (or on two replicas) releases once: Unreserve is
// idempotent.
func (c *Coordinator) releaseReservations(ctx context.Context, j domain.Job, ids []domain.SessionID, reason string) error {
	now := c.clock.Now()
	moved, err := c.store.TransitionSessions(ctx, ids, []domain.SessionStatus{domain.SessionScheduled},
		domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}, reason, now)
	if err != nil {
		return fmt.Errorf("permit timeout: %w", err)
	}
	hist := make([]domain.HistoryEntry, len(moved))
	for i, id := range moved {
		hist[i] = domain.HistoryEntry{Subject: id, At: now, Cause: HandlerJobPermit, Result: domain.ResultExpired,
			From: domain.SessionScheduled, To: domain.SessionPending, Message: reason, Attempt: 1}
	}
	if err := c.store.AppendHistory(ctx, hist); err != nil {
		return err
	}
	if len(moved) > 0 {
		c.log.Info("permit timed out", "job", j.ID, "released", len(moved))
		c.Mark()
	}
	return nil
}

// endMembers ends the live members of a failing job, with the job's
// reason; the job becomes FAILED once none is left.
func (c *Coordinator) endMembers(ctx context.Context, ids []domain.SessionID, reason string) error {
	for _, id := range ids {
		if _, err := c.Terminate(ctx, id, reason, false); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("end member %s: %w", id, err)
		}
	}
	return nil
}
