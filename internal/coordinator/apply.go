package coordinator

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Result is what a lifecycle handler reports about its targets.
type Result struct {
	// Successes are sessions whose attempt succeeded.
	Successes []domain.SessionID
	// Failures were attempted and failed: an agent call errored or timed
	// out, a pull or creation failed, a store write failed. They move the
	// try count.
	Failures []Note
	// Skipped were not attempted (they wait: capacity, quota, …). Only
	// their history changes.
	Skipped []Note
	// successApplied marks successes whose transition the handler already
	// made itself (ScheduleNewSessions, through the guarded plan applier).
	successApplied bool
}

// Note is a session with a message for its history.
type Note struct {
	Session domain.SessionID
	Message string
}

// phaseRequeue counts a session's failed placements: returns to PENDING
// after a give-up or expiry. It is a try count of its own because a
// successful placement resets ScheduleNewSessions' count.
const phaseRequeue domain.HandlerName = "Requeue"

// handlerPolicy carries what the seed's table leaves to the coordinator.
type handlerPolicy struct {
	// retryUntilExpiry: failures never give up; only the residence bound
	// ends the status. TerminateSessions uses it, because giving up would
	// release slots of kernels that may still be running (DESIGN.md: slots
	// are released only once a kernel is known gone or the bound forces it).
	retryUntilExpiry bool
}

// apply is seed 001's _handle_result: success → success target; failure →
// try count + 1 → GIVE_UP at the group's max_retries, else NEED_RETRY;
// EXPIRED when a remaining target stayed in its status past the group's
// bound; SKIPPED → history only. Every outcome lands in history.
func (c *Coordinator) apply(ctx context.Context, h domain.LifecycleHandler, pol handlerPolicy,
	targets []store.SessionWithKernels, res Result, gs groups) error {
	now := c.clock.Now()
	byID := make(map[domain.SessionID]*store.SessionWithKernels, len(targets))
	for i := range targets {
		byID[targets[i].Session.ID] = &targets[i]
	}
	var hist []domain.HistoryEntry
	record := func(id domain.SessionID, r domain.Result, to domain.SessionStatus, msg string) {
		from := domain.SessionStatus(0)
		if t, ok := byID[id]; ok {
			from = t.Session.Status
		}
		if to == 0 {
			to = from
		}
		hist = append(hist, domain.HistoryEntry{SessionID: id, At: now, Handler: h.Name, Result: r,
			From: from, To: to, Message: msg, Attempt: 1})
		c.metrics.outcome(h.Name, r)
	}
	recordAs := func(e domain.HistoryEntry) {
		hist = append(hist, e)
		c.metrics.outcome(e.Handler, e.Result)
	}
	done := make(map[domain.SessionID]bool)
	// lastFailure keeps the message of a failed attempt that expired, so
	// the expiry says what kept failing.
	lastFailure := make(map[domain.SessionID]string)

	if len(res.Successes) > 0 {
		moved := res.Successes
		to := domain.SessionStatus(0)
		if tr := h.Transitions.Success; tr != nil {
			to = tr.Session
			if !res.successApplied {
				// A success that leaves the session where it is (asking an
				// agent again for a pull under way) moves only kernels: it
				// must not restart the session's residence clock, and the
				// session stays subject to its bound below.
				var change, stay []domain.SessionID
				for _, id := range res.Successes {
					if t, ok := byID[id]; ok && t.Session.Status == tr.Session {
						stay = append(stay, id)
					} else {
						change = append(change, id)
					}
				}
				var err error
				moved, err = c.store.TransitionSessions(ctx, change, h.TargetSession, *tr, "", now)
				if err != nil {
					return fmt.Errorf("%s: apply successes: %w", h.Name, err)
				}
				if len(stay) > 0 && tr.Kernel != 0 {
					if _, err := c.store.TransitionSessions(ctx, stay, []domain.SessionStatus{tr.Session},
						domain.Transition{Kernel: tr.Kernel}, "", now); err != nil {
						return fmt.Errorf("%s: apply successes: %w", h.Name, err)
					}
				}
				for _, id := range stay {
					record(id, domain.ResultSuccess, to, "")
				}
			}
		}
		if err := c.store.ResetTries(ctx, h.Name, res.Successes); err != nil {
			return fmt.Errorf("%s: reset tries: %w", h.Name, err)
		}
		for _, id := range moved {
			done[id] = true
			record(id, domain.ResultSuccess, to, "")
		}
	}

	if len(res.Failures) > 0 {
		ids := make([]domain.SessionID, len(res.Failures))
		for i, f := range res.Failures {
			ids[i] = f.Session
			done[f.Session] = true
		}
		counts, err := c.store.IncrementTries(ctx, h.Name, ids)
		if err != nil {
			return fmt.Errorf("%s: count tries: %w", h.Name, err)
		}
		for _, f := range res.Failures {
			t, ok := byID[f.Session]
			if !ok {
				continue
			}
			limit := gs.maxRetries(t.Session.ResourceGroup)
			// A failed attempt past the status's bound expires: retries
			// must not stretch a bound that max_retries set high (or a slow
			// cycle) would otherwise let run on.
			if bound := gs.timeout(t.Session.ResourceGroup, t.Session.Status); bound > 0 &&
				now.Sub(t.Session.StatusChangedAt) > bound && h.Transitions.Expired != nil {
				done[f.Session] = false // let the expiry pass below take it
				lastFailure[f.Session] = f.Message
				continue
			}
			if pol.retryUntilExpiry {
				record(f.Session, domain.ResultNeedRetry, 0,
					fmt.Sprintf("attempt %d failed, retrying until the %s bound: %s", counts[f.Session], t.Session.Status, f.Message))
				continue
			}
			if counts[f.Session] < limit || h.Transitions.GiveUp == nil {
				record(f.Session, domain.ResultNeedRetry, 0,
					fmt.Sprintf("attempt %d of %d failed: %s", counts[f.Session], limit, f.Message))
				continue
			}
			msg := fmt.Sprintf("gave up after %d failed attempts: %s", counts[f.Session], f.Message)
			to, err := c.leave(ctx, h, t, domain.ResultGiveUp, *h.Transitions.GiveUp, msg, now, gs, recordAs)
			if err != nil {
				return err
			}
			if to != 0 {
				record(f.Session, domain.ResultGiveUp, to, msg)
			}
		}
	}

	if tr := h.Transitions.Expired; tr != nil {
		for i := range targets {
			t := &targets[i]
			if done[t.Session.ID] {
				continue
			}
			bound := gs.timeout(t.Session.ResourceGroup, t.Session.Status)
			if bound <= 0 || now.Sub(t.Session.StatusChangedAt) <= bound {
				continue
			}
			done[t.Session.ID] = true
			msg := fmt.Sprintf("%s for longer than %s", t.Session.Status, bound)
			if f, ok := lastFailure[t.Session.ID]; ok {
				msg += "; last attempt failed: " + f
			}
			to, err := c.leave(ctx, h, t, domain.ResultExpired, *tr, msg, now, gs, recordAs)
			if err != nil {
				return err
			}
			if to != 0 {
				record(t.Session.ID, domain.ResultExpired, to, msg)
			}
		}
	}

	for _, s := range res.Skipped {
		if !done[s.Session] {
			record(s.Session, domain.ResultSkipped, 0, s.Message)
		}
	}
	if len(hist) == 0 {
		return nil
	}
	if err := c.store.AppendHistory(ctx, hist); err != nil {
		return fmt.Errorf("%s: history: %w", h.Name, err)
	}
	return nil
}

// leave moves one session out of its status on expiry or give-up. Going
// back to PENDING first tells agents to destroy kernels already created and
// remembers the agents so the next placement prefers others; the store
// releases the reservation as the kernels leave their holding statuses,
// exactly once because the move is guarded by the session's status.
//
// It returns the status the session moved to, which may differ from tr's
// (a session that cannot start over goes TERMINATING), for the caller's
// history row; 0 when the session did not move, or when leave went further
// and recorded the history itself (a requeue that used up max_retries).
func (c *Coordinator) leave(ctx context.Context, h domain.LifecycleHandler, t *store.SessionWithKernels,
	r domain.Result, tr domain.Transition, reason string, now time.Time, gs groups, record func(domain.HistoryEntry)) (domain.SessionStatus, error) {
	if tr.Session == domain.SessionPending && anyEnded(t.Kernels) {
		// A kernel that already ended cannot follow its session back to
		// PENDING (DESIGN.md invariant 2), and the store refuses that move;
		// the session cannot start over, so it ends instead of waiting
		// forever in a status nothing else takes it out of.
		tr = domain.Transition{Session: domain.SessionTerminating}
		reason = "cannot start over, a kernel already ended: " + reason
	}
	if tr.Session == domain.SessionPending {
		var agents []domain.AgentID
		for _, k := range t.Kernels {
			if k.Agent == "" || !k.Status.HoldsResources() {
				continue
			}
			if !slices.Contains(agents, k.Agent) {
				agents = append(agents, k.Agent)
			}
			c.destroyQuietly(ctx, k.Agent, k.ID)
		}
		if len(agents) > 0 {
			if err := c.store.AvoidAgents(ctx, t.Session.ID, agents); err != nil {
				return 0, fmt.Errorf("%s: remember failed agents: %w", h.Name, err)
			}
		}
	}
	if tr.Kernel == domain.KernelTerminated && h.Name == domain.HandlerTerminateSessions {
		// The bound forced this end: tell agents once more to destroy
		// what may still run.
		for _, k := range t.Kernels {
			if k.Agent != "" && !k.Status.Terminal() {
				c.destroyQuietly(ctx, k.Agent, k.ID)
			}
		}
		reason = "force-terminated: " + reason
	}
	moved, err := c.store.TransitionSessions(ctx, []domain.SessionID{t.Session.ID}, []domain.SessionStatus{t.Session.Status}, tr, reason, now)
	if err != nil {
		return 0, fmt.Errorf("%s: move %s to %s: %w", h.Name, t.Session.ID, tr.Session, err)
	}
	if len(moved) == 0 && tr.Session == domain.SessionPending {
		// Refused: the session moved on, or a kernel ended after t was
		// read. In the second case take the session out as above.
		fresh, err := c.store.GetSession(ctx, t.Session.ID)
		if err != nil {
			return 0, fmt.Errorf("%s: reread %s: %w", h.Name, t.Session.ID, err)
		}
		if fresh.Session.Status == t.Session.Status && anyEnded(fresh.Kernels) {
			return c.leave(ctx, h, &fresh, r, tr, reason, now, gs, record)
		}
		return 0, nil
	}
	if len(moved) == 1 && tr.Session == domain.SessionPending {
		// A return to PENDING is a failed placement: ScheduleNewSessions
		// gives up on a session after max_retries of them (its GIVE_UP
		// row), so a session that can never start does not cycle forever.
		// The phases start afresh on the next placement.
		for _, phase := range []domain.HandlerName{domain.HandlerPrepareSessions, domain.HandlerStartSessions} {
			if err := c.store.ResetTries(ctx, phase, moved); err != nil {
				return 0, fmt.Errorf("%s: reset tries: %w", h.Name, err)
			}
		}
		counts, err := c.store.IncrementTries(ctx, phaseRequeue, moved)
		if err != nil {
			return 0, fmt.Errorf("%s: count placements: %w", h.Name, err)
		}
		if limit := gs.maxRetries(t.Session.ResourceGroup); counts[t.Session.ID] >= limit {
			msg := fmt.Sprintf("gave up after %d failed placements; last: %s", counts[t.Session.ID], reason)
			cancel := domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}
			gone, err := c.store.TransitionSessions(ctx, moved, []domain.SessionStatus{domain.SessionPending}, cancel, msg, now)
			if err != nil {
				return 0, fmt.Errorf("%s: cancel %s: %w", h.Name, t.Session.ID, err)
			}
			if len(gone) == 1 {
				record(domain.HistoryEntry{SessionID: t.Session.ID, At: now, Handler: h.Name, Result: r,
					From: t.Session.Status, To: domain.SessionPending, Message: reason, Attempt: 1})
				record(domain.HistoryEntry{SessionID: t.Session.ID, At: now, Handler: domain.HandlerScheduleNewSessions,
					Result: domain.ResultGiveUp, From: domain.SessionPending, To: domain.SessionCancelled, Message: msg, Attempt: 1})
				return 0, nil
			}
		}
	}
	if len(moved) == 0 {
		return 0, nil
	}
	return tr.Session, nil
}

// destroyQuietly asks an agent to destroy a kernel and does not wait for
// success: a kernel it misses is found again when the agent reports kernels
// the manager no longer tracks.
func (c *Coordinator) destroyQuietly(ctx context.Context, agent domain.AgentID, kernel domain.KernelID) {
	cctx, cancel := context.WithTimeout(ctx, c.conf().CallTimeout)
	defer cancel()
	if err := c.agents.DestroyKernel(cctx, agent, kernel, true); err != nil {
		c.log.Warn("destroy kernel", "agent", agent, "kernel", kernel, "err", err)
	}
}

// anyEnded reports whether a kernel has reached a terminal status.
func anyEnded(ks []domain.Kernel) bool {
	return slices.ContainsFunc(ks, func(k domain.Kernel) bool { return k.Status.Terminal() })
}
