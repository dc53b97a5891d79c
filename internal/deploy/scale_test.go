package deploy

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestDecideScaling is the deployment handlers' table for every status
// but DEPLOYING and DESTROYING: which handler runs, what it records, which
// routes a scale-in ends and how many routes start.
func TestDecideScaling(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	t0 := now.Add(-time.Hour)
	route := func(id string, st domain.RouteStatus, served bool, age time.Duration) *domain.Route {
		return &domain.Route{ID: domain.RouteID(id), Status: st, Served: served, CreatedAt: t0.Add(-age)}
	}
	render := func(steps []scaleStep) []string {
		var out []string
		for _, s := range steps {
			switch {
			case len(s.End) > 0:
				var ids []domain.RouteID
				for _, r := range s.End {
					ids = append(ids, r.ID)
				}
				out = append(out, fmt.Sprintf("end %v: %s", ids, s.Message))
			case s.Start > 0:
				out = append(out, fmt.Sprintf("start %d", s.Start))
			default:
				out = append(out, fmt.Sprintf("%s %s: %s", s.Handler, s.Result, s.Message))
			}
		}
		return out
	}
	healthyOf := func(live []*domain.Route) int {
		n := 0
		for _, r := range live {
			if r.Status == domain.RouteHealthy {
				n++
			}
		}
		return n
	}
	h, p := domain.RouteHealthy, domain.RouteProvisioning
	for _, c := range []struct {
		name     string
		status   domain.DeploymentStatus
		replicas int
		failures int
		backoff  time.Duration
		live     []*domain.Route
		want     []string
	}{
		{name: "pending: scaling, all replicas started", status: domain.DeploymentPending, replicas: 2,
			want: []string{"CheckPendingDeployment SUCCESS: 2 replicas wanted", "start 2"}},
		{name: "ready and whole: nothing", status: domain.DeploymentReady, replicas: 2,
			live: []*domain.Route{route("a", h, true, 0), route("b", h, true, 0)}},
		{name: "ready, one replica short: scaling and one started", status: domain.DeploymentReady, replicas: 2,
			live: []*domain.Route{route("a", h, true, 0)},
			want: []string{"CheckReplicaDeployment SUCCESS: 1 live routes, 2 replicas wanted", "start 1"}},
		{name: "ready, a route unhealthy: scaling, waits", status: domain.DeploymentReady, replicas: 2,
			live: []*domain.Route{route("a", h, true, 0), route("b", domain.RouteUnhealthy, true, 0)},
			want: []string{"ReconcileDeployment FAILURE: route b is UNHEALTHY"}},
		{name: "scaling in: not serving first, then the oldest", status: domain.DeploymentScaling, replicas: 1,
			live: []*domain.Route{route("old", h, true, 2*time.Hour), route("new", h, true, 0), route("prov", p, false, 0)},
			want: []string{"end [prov old]: scaling in to 1 replicas"}},
		{name: "scaling, backing off: recorded, nothing started", status: domain.DeploymentScaling, replicas: 1,
			failures: 2, backoff: time.Minute,
			want: []string{"ScalingDeployment FAILURE: 0 of 1 replicas live; backing off after 2 failed starts until 2026-11-27T12:01:00Z"}},
		{name: "scaling after failed starts: one probe at a time", status: domain.DeploymentScaling, replicas: 3, failures: 1,
			want: []string{"start 1"}},
		{name: "scaling after failed starts, a probe pending: wait", status: domain.DeploymentScaling, replicas: 3, failures: 1,
			live: []*domain.Route{route("probe", p, false, 0)}},
		{name: "scaling, every replica healthy: ready", status: domain.DeploymentScaling, replicas: 2,
			live: []*domain.Route{route("a", h, true, 0), route("b", h, true, 0)},
			want: []string{"ScalingDeployment SUCCESS: 2 of 2 replicas HEALTHY"}},
		{name: "scaling, replicas live but not all healthy: wait", status: domain.DeploymentScaling, replicas: 2,
			live: []*domain.Route{route("a", h, true, 0), route("b", p, false, 0)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := domain.Deployment{Status: c.status, Replicas: c.replicas, StartFailures: c.failures}
			if c.backoff > 0 {
				d.NextStartAt = now.Add(c.backoff)
			}
			got := render(decideScaling(d, c.live, healthyOf(c.live), now))
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}
