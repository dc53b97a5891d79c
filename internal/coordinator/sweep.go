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

// Sweep prunes the change feed, ends the sessions their type's hook says
// are done (EndDue), and handles agent loss: an ALIVE agent
// silent past the heartbeat timeout becomes LOST and unschedulable; after
// the grace its kernels are given up — sessions that had not started go
// back to PENDING with their slots released, running ones see their
// kernels in ERROR and terminate.
func (c *Coordinator) Sweep(ctx context.Context) error {
	now := c.clock.Now()
	if err := c.countSessions(ctx); err != nil {
		return err
	}
	// Time limits must not hold up agent loss and pruning: an error here
	// is logged, and the next sweep tries again.
	if err := c.EndDue(ctx); err != nil {
		c.log.Warn("sweep: ending due sessions", "err", err)
	}
	if err := c.DrainDue(ctx); err != nil {
		c.log.Warn("sweep: ending drains past their deadline", "err", err)
	}
	cfg := c.conf()
	// Before the feed is pruned, so the rollup reads what it needs of it.
	if err := c.rollupUsage(ctx, now, cfg.UsageRetention); err != nil {
		c.log.Warn("sweep: rolling up usage", "err", err)
	}
	if _, err := c.store.PruneChanges(ctx, now.Add(-cfg.ChangeRetention)); err != nil {
		return fmt.Errorf("sweep: prune the change feed: %w", err)
	}
	if _, err := c.store.PrunePreemptions(ctx, now.Add(-domain.MaxPreemptionWindow)); err != nil {
		return fmt.Errorf("sweep: prune preemption records: %w", err)
	}
	// Only an agent silent past the timeout is acted on below, ALIVE or
	// LOST.
	agents, err := c.store.ListAgents(ctx, store.AgentFilter{Statuses: []domain.AgentStatus{domain.AgentAlive, domain.AgentLost},
		SilentSince: now.Add(-cfg.HeartbeatTimeout)})
	if err != nil {
		return fmt.Errorf("sweep: list agents: %w", err)
	}
	for _, a := range agents {
		silent := now.Sub(a.LastHeartbeat)
		if a.Status == domain.AgentAlive && silent > cfg.HeartbeatTimeout {
			if err := c.store.SetAgentStatus(ctx, a.ID, domain.AgentLost); err != nil {
				return fmt.Errorf("sweep: mark %s lost: %w", a.ID, err)
			}
			c.log.Warn("agent lost", "agent", a.ID, "silent", silent)
			a.Status = domain.AgentLost
		}
		if a.Status == domain.AgentLost && silent > cfg.HeartbeatTimeout+cfg.LostGrace {
			if err := c.abandonAgent(ctx, a.ID, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// Alive reports whether an agent is alive as Sweep judges it: ALIVE and
// heard from within the heartbeat timeout. An agent past the timeout is as
// good as LOST even before the next sweep marks it so.
func (c *Coordinator) Alive(a domain.Agent) bool {
	return a.Status == domain.AgentAlive && c.clock.Now().Sub(a.LastHeartbeat) <= c.conf().HeartbeatTimeout
}

// countSessions refreshes the live-sessions-by-status gauge.
func (c *Coordinator) countSessions(ctx context.Context) error {
	var live []domain.SessionStatus
	for _, st := range domain.SessionStatuses() {
		if !st.Terminal() {
			live = append(live, st)
		}
	}
	sessions, err := c.store.ListSessions(ctx, store.SessionFilter{Statuses: live})
	if err != nil {
		return fmt.Errorf("sweep: count sessions: %w", err)
	}
	counts := make(map[domain.SessionStatus]int, len(live))
	for _, s := range sessions {
		counts[s.Status]++
	}
	for _, st := range live {
		c.metrics.sessions(st, counts[st])
	}
	return nil
}

func (c *Coordinator) abandonAgent(ctx context.Context, agent domain.AgentID, now time.Time) error {
	kernels, err := c.store.ListKernels(ctx, store.KernelFilter{Agents: []domain.AgentID{agent}})
	if err != nil {
		return fmt.Errorf("sweep: kernels of %s: %w", agent, err)
	}
	return c.abandon(ctx, abandonment{agent: agent, reason: fmt.Sprintf("agent %s lost", agent), avoid: true,
		lost: func(k domain.Kernel) bool { return k.Agent == agent }}, kernels, now)
}

// abandonment says which kernels of an agent are lost and why.
type abandonment struct {
	agent  domain.AgentID
	reason string // "agent a1 lost": a kernel's reason, and the history's with " before the session started"
	// avoid adds the agent to a requeued session's avoid list: right when
	// the whole agent is gone, not when it lost only some devices.
	avoid bool
	// lost picks, among a session's kernels, the ones lost with it.
	lost func(domain.Kernel) bool
}

// abandon gives up kernels that were lost while holding resources: a
// session that had not started goes back to PENDING with its slots and
// devices released; a started kernel ends in ERROR, so its session
// terminates through the ordinary promotion.
func (c *Coordinator) abandon(ctx context.Context, ab abandonment, kernels []domain.Kernel, now time.Time) error {
	agent := ab.agent
	requeue := map[domain.SessionID]bool{}
	var hist []domain.HistoryEntry
	giveUp := func(k domain.Kernel) error {
		_, err := c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: []domain.KernelStatus{k.Status},
			To: domain.KernelError, Reason: ab.reason, Now: now})
		if err != nil && !errors.Is(err, store.ErrGuardFailed) {
			return fmt.Errorf("sweep: give up kernel %s: %w", k.ID, err)
		}
		return nil
	}
	for _, k := range kernels {
		if !k.Status.HoldsResources() {
			continue
		}
		if k.Status < domain.KernelRunning {
			requeue[k.SessionID] = true
			continue
		}
		if err := giveUp(k); err != nil {
			return err
		}
	}
	lost := domain.LifecycleHandler{Name: domain.HandlerAgentLost}
	gs, err := c.groups(ctx)
	if err != nil {
		return err
	}
	var sessions []store.SessionWithKernels
	if len(requeue) > 0 { // an empty IDs filter would select every session
		list, err := c.store.ListSessions(ctx, store.SessionFilter{IDs: sortedSessions(requeue)})
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		if sessions, err = c.withKernels(ctx, list); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	for i := range sessions {
		s := &sessions[i]
		id := s.Session.ID
		// An ending session (terminating, or one that cannot start over)
		// loses what it had on the lost agent with the agent, rather than
		// waiting out the TERMINATING bound on destroy calls that cannot
		// succeed.
		ending := s.Session.Status == domain.SessionTerminating
		if slices.Contains(notStarted, s.Session.Status) {
			msg := ab.reason + " before the session started"
			if ab.avoid {
				if err := c.store.AvoidAgents(ctx, id, []domain.AgentID{agent}); err != nil {
					return fmt.Errorf("sweep: %w", err)
				}
			}
			to, err := c.leave(ctx, lost, s, domain.ResultExpired,
				domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}, msg, now, gs,
				func(e domain.HistoryEntry) { hist = append(hist, e) })
			if err != nil {
				return fmt.Errorf("sweep: requeue %s: %w", id, err)
			}
			if to != 0 {
				hist = append(hist, domain.HistoryEntry{Subject: id, At: now, Cause: lost.Name, Result: domain.ResultExpired,
					From: s.Session.Status, To: to, Message: msg, Attempt: 1})
			}
			// Requeued, cancelled, or moved under us (the next sweep looks
			// again) — unless it could not start over.
			ending = to == domain.SessionTerminating
		}
		if !ending {
			continue
		}
		// Kernels as read before the move: the guard on their status makes
		// a stale one a no-op, left to the next sweep.
		for _, k := range s.Kernels {
			if ab.lost(k) && k.Status.HoldsResources() {
				if err := giveUp(k); err != nil {
					return err
				}
			}
		}
	}
	if len(requeue) > 0 || len(kernels) > 0 {
		c.Mark()
	}
	if len(hist) == 0 {
		return nil
	}
	return c.store.AppendHistory(ctx, hist)
}

// notStarted are the statuses of a session placed but not yet running.
var notStarted = []domain.SessionStatus{domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared, domain.SessionCreating}

func sortedSessions(m map[domain.SessionID]bool) []domain.SessionID {
	out := make([]domain.SessionID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// rollupUsage credits kernels' holds to the hourly accounting history and
// drops hours past the retention. It runs here, off the scheduling path:
// the rollup reads the change feed in a transaction of its own, so no
// round or lifecycle transaction grows. A failure is only logged by Sweep:
// the watermark did not move, and the next pass credits the same span.
func (c *Coordinator) rollupUsage(ctx context.Context, now time.Time, retention time.Duration) error {
	if _, err := c.store.RollupUsage(ctx, now); err != nil {
		return err
	}
	_, err := c.store.PruneUsage(ctx, now.Add(-retention))
	return err
}
