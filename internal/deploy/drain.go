package deploy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// drainingSessions returns the sessions with a kernel that holds slots on
// a draining agent: their routes are to move before the drain's deadline
// ends them. Nil when no agent drains, which costs one read.
func (c *Controller) drainingSessions(ctx context.Context) (map[domain.SessionID]domain.AgentID, error) {
	drains, err := c.store.ListAgentDrains(ctx)
	if err != nil || len(drains) == 0 {
		return nil, err
	}
	agents := make([]domain.AgentID, len(drains))
	for i, d := range drains {
		agents[i] = d.Agent
	}
	ks, err := c.store.ListKernels(ctx, store.KernelFilter{Agents: agents, Statuses: domain.HoldingKernelStatuses()})
	if err != nil {
		return nil, err
	}
	out := make(map[domain.SessionID]domain.AgentID, len(ks))
	for _, k := range ks {
		out[k.SessionID] = k.Agent
	}
	return out, nil
}

// splitDraining parts live routes into those that stay and those whose
// session runs on a draining agent.
func splitDraining(live []*domain.Route, draining map[domain.SessionID]domain.AgentID) (stay, moving []*domain.Route) {
	for _, r := range live {
		if _, ok := draining[r.Session]; ok {
			moving = append(moving, r)
		} else {
			stay = append(stay, r)
		}
	}
	return stay, moving
}

// replaceDrained ends the routes on draining agents once that keeps the
// deployment at its replicas: one not serving (not HEALTHY) at once, a
// HEALTHY one only while the HEALTHY routes left, counting those that
// stay (the replacements scale starts, since moving routes are not
// counted as live) and the moving ones not yet ended, are at least the
// replicas wanted. So a drain never takes a deployment below its healthy
// replicas, unless its deadline ends the sessions first (the
// coordinator's DrainDue), which it does whatever this does.
func (c *Controller) replaceDrained(ctx context.Context, d *domain.Deployment, moving []*domain.Route, healthyStay int,
	draining map[domain.SessionID]domain.AgentID, now time.Time) error {
	if len(moving) == 0 {
		return nil
	}
	moving = slices.Clone(moving)
	slices.SortFunc(moving, scalingOrder)
	healthyMoving := 0
	for _, r := range moving {
		if r.Status == domain.RouteHealthy {
			healthyMoving++
		}
	}
	for _, r := range moving {
		if r.Status == domain.RouteHealthy {
			if healthyStay+healthyMoving-1 < d.Replicas {
				continue
			}
			healthyMoving--
		}
		msg := fmt.Sprintf("agent %s draining: replaced by a route elsewhere", draining[r.Session])
		if err := c.moveRouteTo(ctx, d, r, domain.HandlerScalingDeployment, now, msg); err != nil {
			return err
		}
	}
	return nil
}
