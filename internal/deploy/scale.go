package deploy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// scaleStep is one thing a pass does to a deployment that is neither
// rolling out nor being destroyed. Exactly one of its parts is set.
type scaleStep struct {
	// Handler, Result and Message: a deployment handler's outcome, a
	// move where its row of the table says so, recorded either way.
	Handler domain.HandlerName
	Result  domain.RouteResult
	Message string
	// End are live routes scaled in (to TERMINATING), with Message.
	End []*domain.Route
	// Start is how many routes to start.
	Start int
}

// decideScaling is CheckPending-, CheckReplica-, Reconcile- and
// ScalingDeployment as a rule over values: from the deployment, its live
// routes (those on draining agents left out) and how many of them are
// HEALTHY, the steps of this pass, in order. It changes nothing;
// applyScaling carries the steps out, stopping where a move another pass
// made first takes the deployment elsewhere.
func decideScaling(d domain.Deployment, live []*domain.Route, healthy int, now time.Time) []scaleStep {
	var steps []scaleStep
	status := d.Status
	move := func(h domain.HandlerName, res domain.RouteResult, msg string) {
		steps = append(steps, scaleStep{Handler: h, Result: res, Message: msg})
		if row, ok := domain.DeploymentHandlerByName(h); ok && row.For(res) != 0 {
			status = row.For(res)
		}
	}
	switch status {
	case domain.DeploymentPending, domain.DeploymentCreated:
		move(domain.HandlerCheckPendingDeployment, domain.RouteSuccess, fmt.Sprintf("%d replicas wanted", d.Replicas))
	case domain.DeploymentReady:
		if len(live) != d.Replicas {
			move(domain.HandlerCheckReplicaDeployment, domain.RouteSuccess,
				fmt.Sprintf("%d live routes, %d replicas wanted", len(live), d.Replicas))
			break
		}
		if i := slices.IndexFunc(live, func(r *domain.Route) bool { return r.Status != domain.RouteHealthy }); i >= 0 {
			move(domain.HandlerReconcileDeployment, domain.RouteFailure, fmt.Sprintf("route %s is %s", live[i].ID, live[i].Status))
		}
	}
	if status != domain.DeploymentScaling {
		return steps
	}
	switch {
	case len(live) > d.Replicas:
		extra := slices.Clone(live)
		slices.SortFunc(extra, scalingOrder)
		steps = append(steps, scaleStep{Handler: domain.HandlerScalingDeployment, End: extra[:len(live)-d.Replicas],
			Message: fmt.Sprintf("scaling in to %d replicas", d.Replicas)})
	case len(live) < d.Replicas:
		if now.Before(d.NextStartAt) {
			move(domain.HandlerScalingDeployment, domain.RouteFailure, fmt.Sprintf(
				"%d of %d replicas live; backing off after %d failed starts until %s",
				len(live), d.Replicas, d.StartFailures, d.NextStartAt.Format(time.RFC3339)))
			break
		}
		n := d.Replicas - len(live)
		if d.StartFailures > 0 {
			// One probe at a time while starts keep failing: a live route
			// that has not served yet (provisioning, degraded, or
			// unhealthy within its eviction grace) is that probe, and
			// another waits for its verdict. Counting only this pass's
			// starts let a second probe follow on the next pass once a
			// failed route had left the live set (one that died before
			// serving leaves it at once).
			if slices.ContainsFunc(live, func(r *domain.Route) bool { return !r.Served }) {
				break
			}
			n = 1
		}
		steps = append(steps, scaleStep{Start: n})
	case healthy == d.Replicas:
		move(domain.HandlerScalingDeployment, domain.RouteSuccess, fmt.Sprintf("%d of %d replicas HEALTHY", healthy, d.Replicas))
	}
	return steps
}

// applyScaling carries out decideScaling's steps in order. A move whose
// guard failed (another pass moved the deployment first) ends the pass
// for it: the steps after it were decided for the status it would have
// had.
func (c *Controller) applyScaling(ctx context.Context, d *domain.Deployment, steps []scaleStep, now time.Time) error {
	for _, st := range steps {
		switch {
		case len(st.End) > 0:
			for _, r := range st.End {
				if err := c.moveRouteTo(ctx, d, r, st.Handler, now, st.Message); err != nil {
					return err
				}
			}
		case st.Start > 0:
			for range st.Start {
				if err := c.startRoute(ctx, d, now); err != nil {
					return err
				}
			}
		default:
			from := d.Status
			if err := c.moveDeployment(ctx, d, st.Handler, st.Result, now, st.Message); err != nil {
				return err
			}
			if row, _ := domain.DeploymentHandlerByName(st.Handler); row.For(st.Result) != 0 && d.Status == from {
				return nil // moved by another pass first
			}
		}
	}
	return nil
}
