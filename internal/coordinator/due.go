package coordinator

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/hook"
)

// EndDue ends the RUNNING sessions their type's hook says are done at
// the clock's now — past their time limit, idle past their group's idle
// timeout — moving them to TERMINATING with the hook's reason and outcome
// failure; TerminateSessions then destroys their kernels. One query finds
// the candidates for all sessions and one guarded write per reason moves
// them, so the cost does not grow with sessions that are not due.
//
// Run calls it when the due timer fires at a limit's instant (NextDue),
// and Sweep every long interval as a safety net; the simulator calls it
// at each limit's exact instant.
func (c *Coordinator) EndDue(ctx context.Context) error {
	defer c.metrics.run(domain.HandlerEndDue, time.Now())
	now := c.clock.Now()
	due, err := c.store.DueSessions(ctx, now, c.hooks.IdleTypes())
	if err != nil {
		return fmt.Errorf("end due sessions: %w", err)
	}
	byReason := map[string][]domain.SessionID{}
	for _, d := range due {
		why := c.hooks.For(d.Type).OnEnd(hook.Running{Type: d.Type, Started: d.Started, TimeLimit: d.TimeLimit,
			LastActivity: d.LastActivity, IdleTimeout: d.IdleTimeout}, now)
		if why != "" {
			byReason[why] = append(byReason[why], d.ID)
		}
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	var hist []domain.HistoryEntry
	for _, why := range reasons {
		moved, err := c.store.TransitionSessions(ctx, byReason[why], []domain.SessionStatus{domain.SessionRunning},
			domain.Transition{Session: domain.SessionTerminating, Fail: true}, why, now)
		if err != nil {
			return fmt.Errorf("end due sessions (%s): %w", why, err)
		}
		for _, id := range moved {
			hist = append(hist, domain.HistoryEntry{Subject: id, At: now, Cause: domain.HandlerEndDue,
				Result: domain.ResultSuccess, From: domain.SessionRunning, To: domain.SessionTerminating,
				Message: why, Attempt: 1})
			c.metrics.outcome(domain.HandlerEndDue, domain.ResultSuccess)
		}
	}
	if len(hist) == 0 {
		return nil
	}
	c.Mark()
	if err := c.store.AppendHistory(ctx, hist); err != nil {
		return fmt.Errorf("end due sessions: history: %w", err)
	}
	return nil
}
