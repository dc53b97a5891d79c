package deploy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// rollout is RolloutDeployment, a rolling update to d.Revision: new routes
// start, at most MaxSurge beyond the replicas, and an old route ends only
// when a new one is HEALTHY, so as many replicas serve throughout. A new
// route that fails to start or turns UNHEALTHY fails the rollout: the new
// routes end, the previous spec is restored and the old routes, which
// kept serving, are the deployment again.
func (c *Controller) rollout(ctx context.Context, d *domain.Deployment, live []*domain.Route, now time.Time) error {
	var old, cur []*domain.Route
	healthy := 0
	for _, r := range live {
		if r.Revision == d.Revision {
			cur = append(cur, r)
			if r.Status == domain.RouteHealthy {
				healthy++
			}
		} else {
			old = append(old, r)
		}
	}
	for _, r := range cur {
		if r.Status == domain.RouteUnhealthy {
			return c.rollBack(ctx, d, cur, now, fmt.Sprintf("new route %s is UNHEALTHY: %s", r.ID, r.StatusReason))
		}
	}
	if d.StartFailures > 0 {
		return c.rollBack(ctx, d, cur, now, fmt.Sprintf("%d new routes failed to start", d.StartFailures))
	}
	// Each HEALTHY new route beyond what the old ones leave wanting
	// replaces one old route.
	slices.SortFunc(old, scalingOrder)
	ended := 0
	for excess := len(old) + healthy - d.Replicas; ended < excess && ended < len(old); ended++ {
		if err := c.moveRouteTo(ctx, d, old[ended], domain.HandlerRolloutDeployment, now,
			fmt.Sprintf("replaced by revision %d", d.Revision)); err != nil {
			return err
		}
	}
	surge := max(d.MaxSurge, 1)
	for total := len(live) - ended; len(cur) < d.Replicas && total < d.Replicas+surge; total++ {
		if err := c.startRoute(ctx, d, now); err != nil {
			return err
		}
		if d.StartFailures > 0 {
			return nil // refused at submit: the next pass rolls back
		}
		cur = append(cur, nil)
	}
	if len(old) == ended && healthy == d.Replicas {
		return c.endRollout(ctx, d, domain.RouteSuccess, now, fmt.Sprintf("every replica runs revision %d", d.Revision))
	}
	return nil
}

// rollBack ends the new revision's routes and restores the previous spec
// in the write that leaves DEPLOYING.
func (c *Controller) rollBack(ctx context.Context, d *domain.Deployment, cur []*domain.Route, now time.Time, why string) error {
	for _, r := range cur {
		if err := c.moveRouteTo(ctx, d, r, domain.HandlerRolloutDeployment, now, "rollout failed"); err != nil {
			return err
		}
	}
	return c.endRollout(ctx, d, domain.RouteFailure, now,
		fmt.Sprintf("rollout to revision %d stopped: %s; revision %d keeps serving", d.Revision, why, d.Revision-1))
}

// endRollout leaves DEPLOYING, forgetting the previous spec, or on
// failure restoring it (and clearing the backoff, which counted the new
// spec's failed starts). While DEPLOYING the spec, revision and previous
// spec are the controller's, since the API refuses a spec change then;
// replicas, surge and autoscaling stay the user's and are not written.
// The write is guarded by the revision too, so a rollout that ended and
// a new one a user began meanwhile is not ended by this pass's verdict.
func (c *Controller) endRollout(ctx context.Context, d *domain.Deployment, res domain.RouteResult, now time.Time, msg string) error {
	row, _ := domain.DeploymentHandlerByName(domain.HandlerRolloutDeployment)
	to := row.For(res)
	rollBack := res == domain.RouteFailure
	err := c.recordMove(ctx, d, domain.HandlerRolloutDeployment, res, to, now, msg, func() error {
		return c.store.EndRollout(ctx, d.ID, d.Revision, to, now, rollBack)
	})
	if err != nil || d.Status != to {
		return err
	}
	if rollBack {
		if d.PrevSpec != nil {
			d.Spec = *d.PrevSpec
		}
		d.Revision--
		d.StartFailures, d.NextStartAt = 0, time.Time{}
	}
	d.PrevSpec = nil
	return nil
}
