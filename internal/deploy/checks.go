package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// checkAll is HealthCheckRoute over every due route: STALE first for those
// whose latest result is too old, then the probes, concurrently and at
// most MaxConcurrentChecks at a time, then their results in route order.
func (c *Controller) checkAll(ctx context.Context, deps []domain.Deployment, byDep map[domain.DeploymentID][]*domain.Route, now time.Time) error {
	type job struct {
		d      *domain.Deployment
		r      *domain.Route
		result probe
	}
	var jobs []*job
	var errs []error
	for i := range deps {
		d := &deps[i]
		hc := d.Health.Complete()
		if d.Status == domain.DeploymentDestroying {
			continue
		}
		for _, r := range byDep[d.ID] {
			switch r.Status {
			case domain.RouteProvisioning, domain.RouteHealthy, domain.RouteDegraded, domain.RouteUnhealthy:
			default:
				continue
			}
			if r.SessionStatus != domain.SessionRunning || r.Endpoint == "" {
				continue
			}
			if r.Status != domain.RouteDegraded && !r.CheckedAt.IsZero() &&
				now.Sub(r.CheckedAt) > hc.Stale() {
				errs = append(errs, c.moveRoute(ctx, d, r, domain.HandlerHealthCheckRoute, domain.RouteStale, now,
					fmt.Sprintf("no check result since %s", r.CheckedAt.Format(time.RFC3339))))
			}
			// Probed from the start: the initial delay forgives failures
			// (applyCheck), it does not hold back a success.
			if !r.CheckedAt.IsZero() && now.Sub(r.CheckedAt) < hc.Interval {
				continue
			}
			jobs = append(jobs, &job{d: d, r: r})
		}
	}
	sem := make(chan struct{}, c.cfg.MaxConcurrentChecks)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			j.result = check(ctx, c.client, j.r.Endpoint, j.d.Health.Complete())
		})
	}
	wg.Wait()
	for _, j := range jobs {
		c.metrics.check(j.result)
		errs = append(errs, c.applyCheck(ctx, j.d, j.r, j.result, now))
	}
	return errors.Join(errs...)
}

// applyCheck counts one result and moves the route when a threshold is
// reached: HEALTHY after SuccessThreshold successes in a row, UNHEALTHY
// after FailureThreshold failures in a row.
func (c *Controller) applyCheck(ctx context.Context, d *domain.Deployment, r *domain.Route, p probe, now time.Time) error {
	hc := d.Health.Complete()
	next := *r
	next.CheckedAt = now
	// A PROVISIONING route's failure within the initial delay is a server
	// still coming up: recorded, not counted (Kubernetes' startup probe).
	forgiven := !p.ok && r.Status == domain.RouteProvisioning && now.Sub(r.StatusChangedAt) < hc.InitialDelay
	switch {
	case forgiven:
		next.Successes, next.Failures = 0, 0
	case p.ok:
		next.Successes, next.Failures = next.Successes+1, 0
	default:
		next.Successes, next.Failures = 0, next.Failures+1
	}
	switch {
	case p.ok && r.Status != domain.RouteHealthy && next.Successes >= hc.SuccessThreshold:
		*r = next
		if err := c.moveRoute(ctx, d, r, domain.HandlerHealthCheckRoute, domain.RouteSuccess, now,
			passed(next.Successes)); err != nil {
			return err
		}
		if d.StartFailures > 0 {
			if err := c.store.ResetStartFailures(ctx, d.ID); err == nil {
				d.StartFailures, d.NextStartAt = 0, time.Time{}
			}
		}
		return nil
	case !p.ok && r.Status != domain.RouteUnhealthy && next.Failures >= hc.FailureThreshold:
		*r = next
		return c.moveRoute(ctx, d, r, domain.HandlerHealthCheckRoute, domain.RouteFailure, now,
			fmt.Sprintf("%d checks failed in a row, the latest: %s", next.Failures, p.message))
	}
	from := r.Status
	if err := c.store.UpdateRoute(ctx, next, []domain.RouteStatus{from}); err != nil {
		if errors.Is(err, store.ErrGuardFailed) {
			return nil // moved meanwhile; the next pass counts again
		}
		return fmt.Errorf("route %s: %w", r.ID, err)
	}
	*r = next
	if forgiven {
		return c.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, Route: r.ID, At: now,
			Cause: domain.HandlerHealthCheckRoute, Result: domain.RouteFailure, From: from.String(), To: from.String(),
			Message: fmt.Sprintf("check failed within the initial delay of %s, not counted: %s", hc.InitialDelay, p.message)}})
	}
	if !p.ok {
		// Below the threshold: recorded so `history` shows the route
		// wavering; repeats merge into one entry.
		return c.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, Route: r.ID, At: now,
			Cause: domain.HandlerHealthCheckRoute, Result: domain.RouteFailure, From: from.String(), To: from.String(),
			Message: "check failed: " + p.message}})
	}
	return nil
}

// passed says how many checks passed in a row.
func passed(n int) string {
	if n == 1 {
		return "its check passed"
	}
	return fmt.Sprintf("%d checks passed in a row", n)
}
