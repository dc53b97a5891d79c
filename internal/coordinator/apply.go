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
	// Impossible marks a failure no retry can fix (ErrImpossible): the
	// session is cancelled at once instead of being retried.
	Impossible bool
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

// apply carries out a handler's result, as Nomad's scheduler applies what
// its reconciler decided: decide names each session's outcome from values
// alone; apply reads what decide needs (the try counts), makes the moves,
// and records every outcome in history. It works in four passes —
// successes, failures, expiries in target order, skips — so moves are
// batched and history keeps that order.
func (c *Coordinator) apply(ctx context.Context, h domain.LifecycleHandler, pol handlerPolicy,
	targets []store.SessionWithKernels, res Result, gs groups) error {
	a := &applier{c: c, h: h, pol: pol, targets: targets, res: res, gs: gs, now: c.clock.Now(),
		byID:     make(map[domain.SessionID]*store.SessionWithKernels, len(targets)),
		done:     make(map[domain.SessionID]bool),
		expiring: make(map[domain.SessionID]decision),
	}
	for i := range targets {
		a.byID[targets[i].Session.ID] = &targets[i]
	}
	if err := a.successes(ctx); err != nil {
		return err
	}
	if err := a.failures(ctx); err != nil {
		return err
	}
	if err := a.expiries(ctx); err != nil {
		return err
	}
	a.skips()
	if len(a.hist) == 0 {
		return nil
	}
	if err := c.store.AppendHistory(ctx, a.hist); err != nil {
		return fmt.Errorf("%s: history: %w", h.Name, err)
	}
	return nil
}

// applier is one apply under way: its inputs, and what its passes have
// done so far.
type applier struct {
	c       *Coordinator
	h       domain.LifecycleHandler
	pol     handlerPolicy
	targets []store.SessionWithKernels
	res     Result
	gs      groups
	now     time.Time
	byID    map[domain.SessionID]*store.SessionWithKernels
	hist    []domain.HistoryEntry
	// done marks sessions whose outcome is settled, which the expiry
	// pass leaves alone.
	done map[domain.SessionID]bool
	// expiring holds failed attempts past their bound: they expire with
	// the other overstayed targets, in target order.
	expiring map[domain.SessionID]decision
}

func (a *applier) factsOf(id domain.SessionID, r report, msg string) facts {
	var s *domain.Session
	if t, ok := a.byID[id]; ok {
		s = &t.Session
	}
	return factsAbout(a.h, a.pol, a.res.successApplied, s, a.gs, r, msg, a.now)
}

// record adds d's history row for session id.
func (a *applier) record(id domain.SessionID, d decision) {
	from := domain.SessionStatus(0)
	if t, ok := a.byID[id]; ok {
		from = t.Session.Status
	}
	to := d.status()
	if to == 0 {
		to = from
	}
	a.hist = append(a.hist, domain.HistoryEntry{Subject: id, At: a.now, Cause: a.h.Name, Result: d.Result,
		From: from, To: to, Message: d.Message, Attempt: 1})
	a.c.metrics.outcome(a.h.Name, d.Result)
}

func (a *applier) recordAs(e domain.HistoryEntry) {
	a.hist = append(a.hist, e)
	a.c.metrics.outcome(e.Cause, e.Result)
}

// leaveFor makes a give-up's or an expiry's move; history names the
// status the session reached, which leave may have changed.
func (a *applier) leaveFor(ctx context.Context, t *store.SessionWithKernels, d decision) error {
	to, err := a.c.leave(ctx, a.h, t, d.Result, *d.To, d.Message, a.now, a.gs, a.recordAs)
	if err != nil {
		return err
	}
	if to != 0 {
		d.To = &domain.Transition{Session: to}
		a.record(t.Session.ID, d)
	}
	return nil
}

// successes moves the sessions that succeeded, in one batch, and resets
// their try counts.
func (a *applier) successes(ctx context.Context) error {
	res, h := a.res, a.h
	if len(res.Successes) == 0 {
		return nil
	}
	decided := make(map[domain.SessionID]decision, len(res.Successes))
	var change, stay, kernelsOnly []domain.SessionID
	for _, id := range res.Successes {
		d := decide(a.factsOf(id, succeeded, ""))
		decided[id] = d
		if !d.InPlace {
			change = append(change, id)
			continue
		}
		stay = append(stay, id)
		if d.To != nil {
			kernelsOnly = append(kernelsOnly, id)
		}
	}
	// A success with no transition in the table, or one the handler
	// already moved, needs no write.
	moved := change
	if tr := h.Transitions.Success; tr != nil && !res.successApplied {
		var err error
		moved, err = a.c.store.TransitionSessions(ctx, change, h.TargetSession, *tr, "", a.now)
		if err != nil {
			return fmt.Errorf("%s: apply successes: %w", h.Name, err)
		}
		if len(kernelsOnly) > 0 {
			if _, err := a.c.store.TransitionSessions(ctx, kernelsOnly, []domain.SessionStatus{tr.Session},
				domain.Transition{Kernel: tr.Kernel}, "", a.now); err != nil {
				return fmt.Errorf("%s: apply successes: %w", h.Name, err)
			}
		}
	}
	// Not done: a success in place is still held to the bound below.
	for _, id := range stay {
		a.record(id, decided[id])
	}
	if err := a.c.store.ResetTries(ctx, h.Name, res.Successes); err != nil {
		return fmt.Errorf("%s: reset tries: %w", h.Name, err)
	}
	// A success the guard refused (the session moved under us) is not
	// done either: the bound judges it as it was read.
	for _, id := range moved {
		a.done[id] = true
		a.record(id, decided[id])
	}
	return nil
}

// failures counts the failed tries and gives up on the sessions out of
// them; a failure past its bound waits for the expiry pass.
func (a *applier) failures(ctx context.Context) error {
	res, h := a.res, a.h
	if len(res.Failures) == 0 {
		return nil
	}
	ids := make([]domain.SessionID, len(res.Failures))
	for i, f := range res.Failures {
		ids[i] = f.Session
		a.done[f.Session] = true
	}
	counts, err := a.c.store.IncrementTries(ctx, h.Name, ids)
	if err != nil {
		return fmt.Errorf("%s: count tries: %w", h.Name, err)
	}
	for _, f := range res.Failures {
		t, ok := a.byID[f.Session]
		if !ok {
			continue // counted, but there is no status to judge it by
		}
		in := a.factsOf(f.Session, failed, f.Message)
		in.Tries = counts[f.Session]
		in.Impossible = f.Impossible
		switch d := decide(in); d.Result {
		case domain.ResultExpired:
			a.done[f.Session] = false
			a.expiring[f.Session] = d
		case domain.ResultGiveUp:
			if err := a.leaveFor(ctx, t, d); err != nil {
				return err
			}
		default:
			a.record(f.Session, d)
		}
	}
	return nil
}

// expiries holds every target not done yet to its bound: unreported,
// skipped, a success in place or refused, a failure past its bound.
func (a *applier) expiries(ctx context.Context) error {
	skippedSaid := make(map[domain.SessionID]string, len(a.res.Skipped))
	for _, s := range a.res.Skipped {
		skippedSaid[s.Session] = s.Message
	}
	for i := range a.targets {
		t := &a.targets[i]
		id := t.Session.ID
		if a.done[id] {
			continue
		}
		d, ok := a.expiring[id]
		if !ok {
			in := a.factsOf(id, unreported, "")
			if msg, ok := skippedSaid[id]; ok {
				in.Report, in.Message = skipped, msg
			}
			d = decide(in)
		}
		if d.Result != domain.ResultExpired {
			continue
		}
		a.done[id] = true
		if err := a.leaveFor(ctx, t, d); err != nil {
			return err
		}
	}
	return nil
}

// skips records the skipped sessions that did not expire.
func (a *applier) skips() {
	for _, s := range a.res.Skipped {
		if !a.done[s.Session] {
			a.record(s.Session, decide(a.factsOf(s.Session, skipped, s.Message)))
		}
	}
}

// factsAbout is what decide needs to judge a report on s under handler h;
// s is nil for a session the handler reported but did not target.
func factsAbout(h domain.LifecycleHandler, pol handlerPolicy, applied bool, s *domain.Session, gs groups,
	r report, msg string, now time.Time) facts {
	f := facts{Report: r, Message: msg, Transitions: h.Transitions, Policy: pol, Applied: applied, Now: now}
	if s != nil {
		f.Status, f.StatusChangedAt = s.Status, s.StatusChangedAt
		f.Bound = gs.timeout(s.ResourceGroup, s.Status)
		f.MaxRetries = gs.maxRetries(s.ResourceGroup)
	}
	return f
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
	if tr.Session == domain.SessionCancelled && anyStarted(t.Kernels) {
		// A started kernel cannot be cancelled (no legal edge); ending the
		// session through TERMINATING stops it and releases its slots.
		tr = domain.Transition{Session: domain.SessionTerminating}
		reason = "cannot cancel, a kernel already started: " + reason
	}
	if tr.Session == domain.SessionPending || tr.Session == domain.SessionCancelled {
		// Kernels an agent may have created (a multi-node session's other
		// agents took theirs) must not outlive the placement.
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
		if tr.Session == domain.SessionPending && len(agents) > 0 {
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
				record(domain.HistoryEntry{Subject: t.Session.ID, At: now, Cause: h.Name, Result: r,
					From: t.Session.Status, To: domain.SessionPending, Message: reason, Attempt: 1})
				record(domain.HistoryEntry{Subject: t.Session.ID, At: now, Cause: domain.HandlerScheduleNewSessions,
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
// success (nor, unless calls are serial, for the answer): a kernel it
// misses is found again when the agent reports kernels the manager no
// longer tracks.
func (c *Coordinator) destroyQuietly(ctx context.Context, agent domain.AgentID, kernel domain.KernelID) {
	c.quietly(ctx, agent, func(ctx context.Context) error {
		return c.agents.DestroyKernel(ctx, agent, kernel, true)
	})
}

// anyStarted reports whether a kernel has started: it runs, is being
// stopped, or has ended.
func anyStarted(ks []domain.Kernel) bool {
	return slices.ContainsFunc(ks, func(k domain.Kernel) bool {
		return k.Status == domain.KernelRunning || k.Status == domain.KernelTerminating || k.Status.Terminal()
	})
}

// anyEnded reports whether a kernel has reached a terminal status.
func anyEnded(ks []domain.Kernel) bool {
	return slices.ContainsFunc(ks, func(k domain.Kernel) bool { return k.Status.Terminal() })
}
