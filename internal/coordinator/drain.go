package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// DrainDue ends what still runs on agents whose drain deadline has passed
// (Nomad's `node drain -deadline`): each live session with a kernel there
// is terminated at once, with a reason naming the agent and the deadline.
// Until the deadline the drain only keeps the agent unschedulable, so
// sessions may end on their own. A session already TERMINATING is left to
// its own bound rather than forced again every sweep.
func (c *Coordinator) DrainDue(ctx context.Context) error {
	holding := domain.HoldingKernelStatuses()
	drains, err := c.store.ListAgentDrains(ctx)
	if err != nil {
		return fmt.Errorf("drain: list drains: %w", err)
	}
	now := c.clock.Now()
	for _, d := range drains {
		if !d.Due(now) {
			continue
		}
		kernels, err := c.store.ListKernels(ctx, store.KernelFilter{Agents: []domain.AgentID{d.Agent}, Statuses: holding})
		if err != nil {
			return fmt.Errorf("drain: kernels of %s: %w", d.Agent, err)
		}
		done := map[domain.SessionID]bool{}
		for _, k := range kernels {
			if !k.Status.HoldsResources() || done[k.SessionID] {
				continue
			}
			done[k.SessionID] = true
			s, err := c.store.GetSession(ctx, k.SessionID)
			if err != nil {
				return fmt.Errorf("drain: session %s: %w", k.SessionID, err)
			}
			if s.Session.Status.Terminal() || s.Session.Status == domain.SessionTerminating {
				continue
			}
			reason := fmt.Sprintf("agent %s drained: deadline %s passed", d.Agent, d.Deadline.UTC().Format(time.RFC3339))
			if _, err := c.terminate(ctx, k.SessionID, reason, true, c.forceLater); err != nil {
				return fmt.Errorf("drain: terminate %s: %w", k.SessionID, err)
			}
			c.log.Info("drain deadline passed: session terminated", "agent", d.Agent, "session", k.SessionID)
		}
	}
	return nil
}
