package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Terminate ends a session at a user's request: a PENDING one is cancelled
// at once; any other live one goes TERMINATING and TerminateSessions
// destroys its kernels. With force its kernels are also killed at once,
// without the grace period, also when the session was already terminating.
// It returns the session as it is afterwards.
func (c *Coordinator) Terminate(ctx context.Context, id domain.SessionID, reason string, force bool) (store.SessionWithKernels, error) {
	return c.terminate(ctx, id, reason, force, c.forceDestroy)
}

// TerminateAll ends many sessions at a user's request, as Terminate ends
// one: the PENDING ones are cancelled together, with their history, in
// one transaction, so a 10,000-element array is removed in a few; the
// live others go TERMINATING in one more and, with force, have their
// kernels killed one session after another. It returns how many sessions
// it moved.
func (c *Coordinator) TerminateAll(ctx context.Context, ids []domain.SessionID, reason string, force bool) (int, error) {
	// The history is written in the cancelling transaction: a crash
	// between the two would leave cancelled sessions with no record of who
	// ended them.
	now := c.clock.Now()
	moved, err := c.store.MoveSessions(ctx, store.Move{IDs: ids, From: []domain.SessionStatus{domain.SessionPending},
		To: domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, Reason: reason,
		Now: now, Note: &store.MoveNote{Handler: domain.HandlerUserCancel, Result: domain.ResultSuccess, Message: reason}})
	if err != nil {
		return 0, err
	}
	cancelled := make(map[domain.SessionID]bool, len(moved))
	for _, m := range moved {
		cancelled[m.ID] = true
	}
	n := len(moved)
	var rest []domain.SessionID
	for _, id := range ids {
		if !cancelled[id] {
			rest = append(rest, id)
		}
	}
	if len(rest) == 0 {
		c.Mark()
		return n, nil
	}
	// The live others go TERMINATING together too, as Terminate moves one:
	// one write, not a read, a write and a read again per element.
	ended, err := c.store.MoveSessions(ctx, store.Move{IDs: rest, From: terminable(), To: domain.Transition{Session: domain.SessionTerminating},
		Reason: reason, Now: now, Note: &store.MoveNote{Handler: domain.HandlerUserTerminate, Result: domain.ResultSuccess, Message: reason}})
	c.Mark()
	if err != nil || !force {
		return n + len(ended), err
	}
	n += len(ended)
	// With force their kernels are killed now, as Terminate's are; one
	// already TERMINATING counts as ended by this call, as there.
	movedNow := make(map[domain.SessionID]bool, len(ended))
	for _, m := range ended {
		movedNow[m.ID] = true
	}
	sessions, err := c.store.ListSessions(ctx, store.SessionFilter{IDs: rest, Statuses: []domain.SessionStatus{domain.SessionTerminating}})
	if err != nil {
		return n, err
	}
	targets, err := c.withKernels(ctx, sessions)
	if err != nil {
		return n, err
	}
	// Side by side, within the agent calls' shared bound: an agent that
	// hangs holds up its own kernels for a call timeout, not every
	// session after them in turn.
	var wg sync.WaitGroup
	errs := make([]error, len(targets))
	for i, t := range targets {
		if !movedNow[t.Session.ID] {
			n++
		}
		wg.Go(func() { _, errs[i] = c.forceDestroy(ctx, t, now) })
	}
	wg.Wait()
	return n, errors.Join(errs...)
}

// terminable are the statuses a user's terminate moves to TERMINATING:
// the live ones but PENDING (cancelled instead) and TERMINATING itself.
func terminable() []domain.SessionStatus {
	return slices.DeleteFunc(domain.SessionStatuses(), func(s domain.SessionStatus) bool {
		return s.Terminal() || s == domain.SessionPending || s == domain.SessionTerminating
	})
}

// forceLater is forceDestroy in the background, for the coordinator's own
// loop: a drained agent that hangs must not hold the loop for a call
// timeout. The session is TERMINATING already, so a destroy that does not
// finish is TerminateSessions' to retry. The simulator, which calls agents
// in turn, waits for it as before.
func (c *Coordinator) forceLater(ctx context.Context, s store.SessionWithKernels, now time.Time) (store.SessionWithKernels, error) {
	if c.serial() {
		return c.forceDestroy(ctx, s, now)
	}
	// ctx is the loop's: it outlives this sweep and ends with the
	// coordinator, which waits for the destroy (WaitCalls).
	c.calls.bg.Go(func() {
		// Counted as a destroy under way, so TerminateSessions does not
		// send its own for the same kernels meanwhile.
		c.calls.holding(callDestroy, []domain.SessionID{s.Session.ID}, func() {
			if _, err := c.forceDestroy(ctx, s, now); err != nil {
				c.log.Warn("forced destroy", "session", s.Session.ID, "err", err)
			}
		})
	})
	return s, nil
}

func (c *Coordinator) terminate(ctx context.Context, id domain.SessionID, reason string, force bool,
	destroy func(context.Context, store.SessionWithKernels, time.Time) (store.SessionWithKernels, error)) (store.SessionWithKernels, error) {
	// A session may move between the read and the guarded write; a few
	// tries see where it went.
	for range 5 {
		now := c.clock.Now()
		s, err := c.store.GetSession(ctx, id)
		if err != nil {
			return store.SessionWithKernels{}, err
		}
		from := s.Session.Status
		var to domain.Transition
		var handler domain.HandlerName
		switch {
		case from == domain.SessionPending:
			to = domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}
			handler = domain.HandlerUserCancel
		case from.Terminal():
			return s, nil
		case from == domain.SessionTerminating:
			if !force {
				return s, nil
			}
			return destroy(ctx, s, now)
		default:
			to = domain.Transition{Session: domain.SessionTerminating}
			handler = domain.HandlerUserTerminate
		}
		// The history goes in the move's own transaction, so a crash
		// cannot leave the session ended with no record of who ended it.
		moved, err := c.store.MoveSessions(ctx, store.Move{IDs: []domain.SessionID{id}, From: []domain.SessionStatus{from},
			To: to, Reason: reason, Now: now, Note: &store.MoveNote{Handler: handler, Result: domain.ResultSuccess, Message: reason}})
		if err != nil {
			return store.SessionWithKernels{}, err
		}
		if len(moved) == 0 {
			continue
		}
		c.Mark()
		if force && to.Session == domain.SessionTerminating {
			return destroy(ctx, s, now)
		}
		return c.store.GetSession(ctx, id)
	}
	return store.SessionWithKernels{}, fmt.Errorf("terminate %s: it kept changing status; try again: %w", id, store.ErrConflict)
}

// forceDestroy kills a terminating session's kernels without grace, in
// parallel, and records each one its agent confirms gone, so a forced end
// frees its slots now instead of at the next TerminateSessions round. A
// kernel whose agent does not answer is left to TerminateSessions, which
// retries until the TERMINATING bound (releasing slots of a kernel that may
// still run would double-book them).
func (c *Coordinator) forceDestroy(ctx context.Context, s store.SessionWithKernels, now time.Time) (store.SessionWithKernels, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(s.Kernels))
	for i, k := range s.Kernels {
		if k.Agent == "" || k.Status.Terminal() || !k.Status.HoldsResources() {
			continue
		}
		if c.calls.isIsolated(k.Agent) {
			continue // left to TerminateSessions, as an agent that does not answer is
		}
		wg.Go(func() {
			// Within the calls' shared bound, as every agent call is.
			select {
			case c.calls.sem <- struct{}{}:
				defer func() { <-c.calls.sem }()
			case <-ctx.Done():
				return
			}
			err := c.call(ctx, k.Agent, func(ctx context.Context) error {
				return c.agents.DestroyKernel(ctx, k.Agent, k.ID, true)
			})
			if err != nil {
				c.log.Warn("forced destroy", "agent", k.Agent, "kernel", k.ID, "err", err)
				return
			}
			_, err = c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: nonTerminal(),
				To: domain.KernelTerminated, Reason: "destroyed (forced)", Now: now})
			if err != nil && !errors.Is(err, store.ErrGuardFailed) {
				errs[i] = fmt.Errorf("mark %s terminated: %w", k.ID, err)
			}
		})
	}
	wg.Wait()
	c.Mark()
	if err := errors.Join(errs...); err != nil {
		return store.SessionWithKernels{}, err
	}
	return c.store.GetSession(ctx, s.Session.ID)
}
