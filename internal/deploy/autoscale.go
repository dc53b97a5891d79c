package deploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// loadWindow is how recent a manager's load report must be to count:
// a few report intervals, so a manager that stopped reporting (gone,
// or no longer proxying) drops out.
func (c *Controller) loadWindow() time.Duration { return max(3*c.cfg.Interval, 3*time.Second) }

// autoscaleAll sets the replicas of every READY or SCALING deployment
// with an autoscaling rule from the load all managers' proxies report,
// at most once per cooldown; the deployment handlers then scale. The
// decision is recorded in history.
func (c *Controller) autoscaleAll(ctx context.Context, deps []domain.Deployment, byDep map[domain.DeploymentID][]*domain.Route, now time.Time) error {
	some := false
	for _, d := range deps {
		some = some || d.Autoscale != nil
	}
	if !some {
		return nil
	}
	load, err := c.store.DeploymentLoad(ctx, now.Add(-c.loadWindow()))
	if err != nil {
		return err
	}
	var errs []error
	for i := range deps {
		d := &deps[i]
		a := d.Autoscale
		if a == nil || (d.Status != domain.DeploymentReady && d.Status != domain.DeploymentScaling) {
			continue
		}
		want := a.Want(load[d.ID])
		if want == d.Replicas || (!d.ScaledAt.IsZero() && now.Sub(d.ScaledAt) < a.Cooldown) {
			continue
		}
		healthy := 0
		for _, r := range byDep[d.ID] {
			if r.Status == domain.RouteHealthy {
				healthy++
			}
		}
		if err := c.store.ScaleDeployment(ctx, d.ID, want, now, []domain.DeploymentStatus{d.Status}); err != nil {
			if !errors.Is(err, store.ErrGuardFailed) {
				errs = append(errs, fmt.Errorf("autoscale %s: %w", d.ID, err))
			}
			continue
		}
		msg := fmt.Sprintf("%.2f requests in flight on %d HEALTHY routes, target %g per route: replicas %d → %d",
			load[d.ID], healthy, a.Target, d.Replicas, want)
		d.Replicas, d.ScaledAt = want, now
		errs = append(errs, c.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, At: now,
			Cause: domain.HandlerAutoscaleDeployment, Result: domain.RouteSuccess, From: d.Status.String(),
			To: d.Status.String(), Message: msg}}))
	}
	return errors.Join(errs...)
}
