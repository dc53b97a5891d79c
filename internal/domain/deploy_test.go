package domain

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDeploymentAndRouteTablesMatchSeed001 holds the tables to seed 001's
// rows, written out here by hand from the seed.
func TestDeploymentAndRouteTablesMatchSeed001(t *testing.T) {
	type drow struct{ name, in, success, failure string }
	var gotD []drow
	for _, h := range DeploymentHandlers() {
		gotD = append(gotD, drow{string(h.Name), joinStatuses(h.Target), deployCell(h.Success), deployCell(h.Failure)})
	}
	wantD := []drow{
		{"CheckPendingDeployment", "PENDING, CREATED", "SCALING", "(maintain)"},
		{"ScalingDeployment", "SCALING", "READY", "(maintain)"},
		{"CheckReplicaDeployment", "READY", "SCALING", "(maintain)"},
		{"ReconcileDeployment", "READY", "(maintain)", "SCALING"},
		{"DestroyingDeployment", "DESTROYING", "DESTROYED", "DESTROYED"},
		// Ours: seed 001 names DEPLOYING without a handler.
		{"RolloutDeployment", "DEPLOYING", "READY", "SCALING"},
	}
	if diff := cmp.Diff(wantD, gotD, cmp.AllowUnexported(drow{})); diff != "" {
		t.Errorf("deployment table (-want +got):\n%s", diff)
	}

	type rrow struct{ name, in, success, failure, stale string }
	var gotR []rrow
	for _, h := range RouteHandlers() {
		gotR = append(gotR, rrow{string(h.Name), joinStatuses(h.Target), routeCell(h.Success), routeCell(h.Failure), routeCell(h.Stale)})
	}
	wantR := []rrow{
		// Ours: a route is PROVISIONING until its first health result
		// (seed 001 moves it to DEGRADED once its session runs).
		{"ProvisioningRoute", "PROVISIONING", "(maintain)", "FAILED_TO_START", "(maintain)"},
		{"HealthCheckRoute", "PROVISIONING, HEALTHY, UNHEALTHY, DEGRADED", "HEALTHY", "UNHEALTHY", "DEGRADED"},
		{"RunningRoute", "DEGRADED, HEALTHY, UNHEALTHY, FAILED_TO_START", "(maintain)", "TERMINATING", "(maintain)"},
		{"RouteEviction", "UNHEALTHY", "TERMINATING", "(maintain)", "(maintain)"},
		{"TerminatingRoute", "TERMINATING", "TERMINATED", "(maintain)", "(maintain)"},
		{"ServiceDiscoverySync", "HEALTHY", "(maintain)", "(maintain)", "(maintain)"},
	}
	if diff := cmp.Diff(wantR, gotR, cmp.AllowUnexported(rrow{})); diff != "" {
		t.Errorf("route table (-want +got):\n%s", diff)
	}
}

// TestEveryNonTerminalRouteStatusIsBounded: a route status that neither
// the health check nor a time bound ends could hold a route for ever.
func TestEveryNonTerminalRouteStatusIsBounded(t *testing.T) {
	bounded := map[RouteStatus]bool{RouteHealthy: true, RouteDegraded: true} // by the health check
	for _, b := range RouteBounds() {
		h, ok := RouteHandlerByName(b.Handler)
		if !ok {
			t.Fatalf("bound of %v names unknown handler %s", b.Status, b.Handler)
		}
		if to := h.For(b.Result); to == 0 || to == b.Status {
			t.Errorf("bound of %v: %s %s does not move it", b.Status, b.Handler, b.Result)
		}
		bounded[b.Status] = true
	}
	for _, s := range RouteStatuses() {
		if !s.Terminal() && !bounded[s] {
			t.Errorf("route status %v has no bound", s)
		}
	}
}

func TestDeployStatusNamesRoundTrip(t *testing.T) {
	for _, s := range DeploymentStatuses() {
		if got, err := ParseDeploymentStatus(s.String()); err != nil || got != s {
			t.Errorf("ParseDeploymentStatus(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range RouteStatuses() {
		if got, err := ParseRouteStatus(s.String()); err != nil || got != s {
			t.Errorf("ParseRouteStatus(%q) = %v, %v", s, got, err)
		}
	}
}

func TestAutoscaleWantsEnoughRoutesForTheTarget(t *testing.T) {
	a := Autoscale{Min: 1, Max: 5, Target: 2}
	for _, tc := range []struct {
		load float64
		want int
	}{
		{0, 1},   // never below Min
		{2, 1},   // 2 in flight / 2 per route
		{2.1, 2}, // a little over: one more route
		{6, 3},
		{100, 5}, // never above Max
	} {
		if got := a.Want(tc.load); got != tc.want {
			t.Errorf("Want(%v) = %d, want %d", tc.load, got, tc.want)
		}
	}
}
