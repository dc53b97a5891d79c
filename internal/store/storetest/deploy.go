package storetest

import (
	"bytes"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

func deployment(id, name, user string, replicas int) domain.Deployment {
	return domain.Deployment{ID: domain.DeploymentID(id), Name: name, Owner: domain.Owner{User: user, Project: "p", Domain: "d"},
		Status: domain.DeploymentPending, StatusChangedAt: at(1), CreatedAt: at(1), Replicas: replicas,
		Spec: domain.DeploymentSpec{Image: "http-echo", Resources: map[string]string{"cpu": "1"},
			Command: []string{"serve"}, Env: map[string]string{"A": "b"}},
		Health: domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: 500 * time.Millisecond,
			SuccessThreshold: 1, FailureThreshold: 3}, Revision: 1, MaxSurge: 1}
}

// wantDeployment checks the stored deployment want.ID against want.
func (f *fixture) wantDeployment(want domain.Deployment, when string) {
	f.t.Helper()
	got, err := f.s.GetDeployment(f.ctx, want.ID)
	f.must(err, "get %s", want.ID)
	if diff := cmp.Diff(want, got); diff != "" {
		f.t.Errorf("%s (-want +got):\n%s", when, diff)
	}
}

func testDeployments(t *testing.T, e Engine) {
	f := newFixture(t, e)
	d1 := deployment("d1", "llm", "alice", 3)
	f.must(f.s.CreateDeployment(f.ctx, d1), "create d1")
	f.wantDeployment(d1, "round trip")
	wantErr(t, f.s.CreateDeployment(f.ctx, deployment("d2", "llm", "alice", 1)), store.ErrDeploymentNameTaken, "live name reused")
	wantErr(t, f.s.CreateDeployment(f.ctx, deployment("d1", "other", "alice", 1)), store.ErrConflict, "id reused")
	f.must(f.s.CreateDeployment(f.ctx, deployment("d3", "llm", "bob", 1)), "same name, other owner")
	_, err := f.s.GetDeployment(f.ctx, "ghost")
	wantErr(t, err, store.ErrNotFound, "get unknown deployment")

	// Destroy in one write: desired 0 and DESTROYING together, guarded.
	d1.Status, d1.Replicas, d1.StatusChangedAt = domain.DeploymentDestroying, 0, at(5)
	d1.StartFailures, d1.NextStartAt = 2, at(9)
	prev := d1.Spec
	d1.PrevSpec, d1.Revision, d1.MaxSurge = &prev, 2, 3
	d1.Spec.Image = "http-echo:v2"
	live := []domain.DeploymentStatus{domain.DeploymentPending, domain.DeploymentScaling, domain.DeploymentReady}
	f.must(f.s.UpdateDeployment(f.ctx, d1, live), "destroy d1")
	wantErr(t, f.s.UpdateDeployment(f.ctx, d1, live), store.ErrGuardFailed, "destroy twice")
	wantErr(t, f.s.UpdateDeployment(f.ctx, deployment("ghost", "x", "alice", 1), live), store.ErrNotFound, "update unknown")
	// The backoff is the controller's: a user's write leaves it as stored.
	d1.StartFailures, d1.NextStartAt = 0, time.Time{}
	f.wantDeployment(d1, "after destroy")
	d1.Status = domain.DeploymentDestroyed
	f.must(f.s.UpdateDeployment(f.ctx, d1, []domain.DeploymentStatus{domain.DeploymentDestroying}), "destroyed")
	f.must(f.s.CreateDeployment(f.ctx, deployment("d2", "llm", "alice", 1)), "name of a destroyed deployment is free")

	list := func(fl store.DeploymentFilter) []domain.DeploymentID {
		ds, err := f.s.ListDeployments(f.ctx, fl)
		f.must(err, "list %+v", fl)
		return idsOf(ds, func(d domain.Deployment) domain.DeploymentID { return d.ID })
	}
	for _, tc := range []struct {
		name string
		f    store.DeploymentFilter
		want []domain.DeploymentID
	}{
		{"all", store.DeploymentFilter{}, []domain.DeploymentID{"d1", "d2", "d3"}},
		{"user", store.DeploymentFilter{User: "alice"}, []domain.DeploymentID{"d1", "d2"}},
		{"name", store.DeploymentFilter{User: "alice", Name: "llm", Statuses: []domain.DeploymentStatus{domain.DeploymentPending}}, []domain.DeploymentID{"d2"}},
		{"prefix", store.DeploymentFilter{IDPrefix: "d3"}, []domain.DeploymentID{"d3"}},
		{"status", store.DeploymentFilter{Statuses: []domain.DeploymentStatus{domain.DeploymentDestroyed}}, []domain.DeploymentID{"d1"}},
	} {
		if diff := cmp.Diff(tc.want, list(tc.f)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func testDeploymentRoutes(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8"})
	f.must(f.s.CreateDeployment(f.ctx, deployment("d1", "llm", "alice", 2)), "create d1")
	s1 := f.session("s1", "g", "alice", 1, []string{"cpu", "1"}, func(s *domain.Session) { s.Type = domain.TypeInference })
	f.schedule("g", s1, "a1")
	f.advance("s1", domain.SessionRunning)

	r1 := domain.Route{ID: "r1", Deployment: "d1", Session: "s1", Status: domain.RouteProvisioning,
		StatusChangedAt: at(2), CreatedAt: at(2), Revision: 2}
	// r2's session was never created (a crash between the two writes).
	r2 := domain.Route{ID: "r2", Deployment: "d1", Session: "s-missing", Status: domain.RouteProvisioning,
		StatusChangedAt: at(3), CreatedAt: at(3)}
	f.must(f.s.CreateRoute(f.ctx, r1), "create r1")
	f.must(f.s.CreateRoute(f.ctx, r2), "create r2")
	wantErr(t, f.s.CreateRoute(f.ctx, domain.Route{ID: "r3", Deployment: "ghost", Session: "s3",
		Status: domain.RouteProvisioning, StatusChangedAt: at(3), CreatedAt: at(3)}), store.ErrNotFound, "route of unknown deployment")
	wantErr(t, f.s.CreateRoute(f.ctx, domain.Route{ID: "r4", Deployment: "d1", Session: "s1",
		Status: domain.RouteProvisioning, StatusChangedAt: at(3), CreatedAt: at(3)}), store.ErrConflict, "second route of one session")

	routes, err := f.s.ListRoutes(f.ctx, store.RouteFilter{Deployments: []domain.DeploymentID{"d1"}})
	f.must(err, "list routes")
	r1.SessionStatus = domain.SessionRunning
	if diff := cmp.Diff([]domain.Route{r1, r2}, routes); diff != "" {
		t.Errorf("routes with their sessions' status (-want +got):\n%s", diff)
	}

	r1.Status, r1.StatusReason, r1.StatusChangedAt = domain.RouteHealthy, "2 checks passed", at(6)
	r1.Successes, r1.Failures, r1.CheckedAt, r1.Endpoint = 2, 0, at(6), "127.0.0.1:9000"
	f.must(f.s.UpdateRoute(f.ctx, r1, []domain.RouteStatus{domain.RouteProvisioning, domain.RouteDegraded}), "r1 healthy")
	wantErr(t, f.s.UpdateRoute(f.ctx, r1, []domain.RouteStatus{domain.RouteProvisioning}), store.ErrGuardFailed, "guarded route update")
	wantErr(t, f.s.UpdateRoute(f.ctx, domain.Route{ID: "ghost", Status: domain.RouteHealthy, StatusChangedAt: at(1)},
		[]domain.RouteStatus{domain.RouteProvisioning}), store.ErrNotFound, "update unknown route")

	// r5 runs but never served: its end is the controller's to take, as
	// a failed start, so the session's transaction leaves it be.
	s2 := f.session("s2", "g", "alice", 1, []string{"cpu", "1"}, func(s *domain.Session) { s.Type = domain.TypeInference })
	f.schedule("g", s2, "a1")
	f.advance("s2", domain.SessionRunning)
	r5 := domain.Route{ID: "r5", Deployment: "d1", Session: "s2", Status: domain.RouteDegraded,
		StatusChangedAt: at(4), CreatedAt: at(4), Successes: 1, CheckedAt: at(5), Endpoint: "127.0.0.1:9001"}
	f.must(f.s.CreateRoute(f.ctx, r5), "create r5")

	// Liveness follows the session in the session's own transaction: once
	// it leaves RUNNING its route, if it served, is TERMINATING
	// (RunningRoute FAILURE), with a history entry naming why.
	_, err = f.s.TransitionSessions(f.ctx, []domain.SessionID{"s1", "s2"}, []domain.SessionStatus{domain.SessionRunning},
		domain.Transition{Session: domain.SessionTerminating, Kernel: domain.KernelTerminating}, "ended", at(7))
	f.must(err, "terminate s1 and s2")
	healthy, err := f.s.ListRoutes(f.ctx, store.RouteFilter{Statuses: []domain.RouteStatus{domain.RouteHealthy}})
	f.must(err, "list healthy")
	if len(healthy) != 0 {
		t.Errorf("healthy routes = %+v after their session ended, want none", healthy)
	}
	routes, err = f.s.ListRoutes(f.ctx, store.RouteFilter{Deployments: []domain.DeploymentID{"d1"}})
	f.must(err, "list routes")
	if r := routes[0]; r.ID != "r1" || r.Status != domain.RouteTerminating || !r.StatusChangedAt.Equal(at(7)) ||
		r.StatusReason != "its session is TERMINATING: ended" || r.Endpoint != "127.0.0.1:9000" || !r.Served {
		t.Errorf("r1 = %+v, want TERMINATING at(7) because its session is TERMINATING, and served", r)
	}
	r5.SessionStatus = domain.SessionTerminating
	if diff := cmp.Diff(r5, routes[2]); diff != "" {
		t.Errorf("a route that never served, after its session ended (-want +got):\n%s", diff)
	}
	hist, err := f.s.DeploymentHistory(f.ctx, "d1")
	f.must(err, "history")
	want := domain.DeploymentHistoryEntry{Subject: "d1", Route: "r1", At: at(7), Cause: domain.HandlerRunningRoute,
		Result: domain.RouteFailure, From: "HEALTHY", To: "TERMINATING", Message: "its session is TERMINATING: ended", Attempt: 1}
	if len(hist) != 1 || !cmp.Equal(hist[0], want) {
		t.Errorf("history %+v, want %+v", hist, want)
	}
	// A route cannot be made HEALTHY while its session is not RUNNING.
	r1 = routes[0]
	r1.Status = domain.RouteHealthy
	wantErr(t, f.s.UpdateRoute(f.ctx, r1, []domain.RouteStatus{domain.RouteTerminating}), store.ErrGuardFailed, "HEALTHY without a RUNNING session")
	f.invariant()
}

func testDeploymentHistory(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.must(f.s.CreateDeployment(f.ctx, deployment("d1", "llm", "alice", 1)), "create d1")
	check := func(sec int, route domain.RouteID, res domain.RouteResult, msg string) domain.DeploymentHistoryEntry {
		return domain.DeploymentHistoryEntry{Subject: "d1", Route: route, At: at(sec), Cause: domain.HandlerHealthCheckRoute,
			Result: res, From: "DEGRADED", To: "DEGRADED", Message: msg}
	}
	scaling := domain.DeploymentHistoryEntry{Subject: "d1", At: at(1), Cause: domain.HandlerCheckPendingDeployment,
		Result: domain.RouteSuccess, From: "PENDING", To: "SCALING"}
	f.must(f.s.AppendDeploymentHistory(f.ctx, []domain.DeploymentHistoryEntry{scaling}), "append scaling")
	f.must(f.s.AppendDeploymentHistory(f.ctx, []domain.DeploymentHistoryEntry{
		check(2, "r1", domain.RouteFailure, "connection refused"),
		check(3, "r1", domain.RouteFailure, "connection refused"), // merges
		check(3, "r2", domain.RouteFailure, "connection refused"), // another route: its own entry
	}), "append checks")
	f.must(f.s.AppendDeploymentHistory(f.ctx, []domain.DeploymentHistoryEntry{check(4, "r1", domain.RouteFailure, "connection refused")}), "merge again")
	got, err := f.s.DeploymentHistory(f.ctx, "d1")
	f.must(err, "history")
	n := func(h domain.DeploymentHistoryEntry, a int) domain.DeploymentHistoryEntry { h.Attempt = a; return h }
	want := []domain.DeploymentHistoryEntry{n(scaling, 1), n(check(4, "r1", domain.RouteFailure, "connection refused"), 3),
		n(check(3, "r2", domain.RouteFailure, "connection refused"), 1)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	bad := check(5, "r1", "MAYBE", "x")
	wantErr(t, f.s.AppendDeploymentHistory(f.ctx, []domain.DeploymentHistoryEntry{bad}), store.ErrInvalid, "unknown result")
	wantErr(t, f.s.AppendDeploymentHistory(f.ctx, []domain.DeploymentHistoryEntry{{Subject: "ghost", At: at(1),
		Cause: domain.HandlerScalingDeployment, Result: domain.RouteSuccess, From: "SCALING", To: "READY"}}), store.ErrNotFound, "unknown deployment")
}

func testDeploymentTokens(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.must(f.s.CreateDeployment(f.ctx, deployment("d1", "llm", "alice", 1)), "create d1")
	f.must(f.s.CreateDeployment(f.ctx, deployment("d2", "other", "alice", 1)), "create d2")
	hash := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	f.must(f.s.CreateDeploymentToken(f.ctx, store.DeploymentToken{ID: "t1", Deployment: "d1", CreatedAt: at(1)}, hash(1)), "t1")
	f.must(f.s.CreateDeploymentToken(f.ctx, store.DeploymentToken{ID: "t2", Deployment: "d1", CreatedAt: at(2)}, hash(2)), "t2")
	wantErr(t, f.s.CreateDeploymentToken(f.ctx, store.DeploymentToken{ID: "t3", Deployment: "d2", CreatedAt: at(3)}, hash(1)),
		store.ErrConflict, "a hash already in use")
	wantErr(t, f.s.CreateDeploymentToken(f.ctx, store.DeploymentToken{ID: "t4", Deployment: "ghost", CreatedAt: at(3)}, hash(4)),
		store.ErrNotFound, "token of an unknown deployment")

	got, err := f.s.DeploymentByTokenHash(f.ctx, hash(2))
	if err != nil || got != "d1" {
		t.Errorf("deployment by t2's hash = %q, %v; want d1", got, err)
	}
	_, err = f.s.DeploymentByTokenHash(f.ctx, hash(9))
	wantErr(t, err, store.ErrNotFound, "unknown hash")

	f.must(f.s.RevokeDeploymentToken(f.ctx, "d1", "t2", at(5)), "revoke t2")
	wantErr(t, f.s.RevokeDeploymentToken(f.ctx, "d1", "t2", at(6)), store.ErrGuardFailed, "revoke twice")
	wantErr(t, f.s.RevokeDeploymentToken(f.ctx, "d2", "t1", at(6)), store.ErrNotFound, "revoke through another deployment")
	_, err = f.s.DeploymentByTokenHash(f.ctx, hash(2))
	wantErr(t, err, store.ErrNotFound, "a revoked token opens nothing")

	tokens, err := f.s.DeploymentTokens(f.ctx, "d1")
	f.must(err, "list tokens")
	want := []store.DeploymentToken{{ID: "t1", Deployment: "d1", CreatedAt: at(1)}, {ID: "t2", Deployment: "d1", CreatedAt: at(2), RevokedAt: at(5)}}
	if diff := cmp.Diff(want, tokens); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
}

func testDeploymentAutoscaleAndLoad(t *testing.T, e Engine) {
	f := newFixture(t, e)
	d := deployment("d1", "llm", "alice", 2)
	d.Autoscale = &domain.Autoscale{Min: 1, Max: 4, Target: 2.5, Cooldown: time.Minute}
	f.must(f.s.CreateDeployment(f.ctx, d), "create d1")
	f.must(f.s.CreateDeployment(f.ctx, deployment("d2", "other", "alice", 1)), "create d2")
	f.wantDeployment(d, "autoscale round trip")
	d.Replicas, d.ScaledAt, d.Autoscale = 3, at(5), nil
	f.must(f.s.UpdateDeployment(f.ctx, d, []domain.DeploymentStatus{domain.DeploymentPending}), "scale d1")
	d.ScaledAt = time.Time{} // the controller's, not a user's to write
	f.wantDeployment(d, "after autoscaling off")

	f.must(f.s.ReportDeploymentLoad(f.ctx, "m1", map[domain.DeploymentID]float64{"d1": 1.5, "d2": 0.5, "ghost": 9}, at(10)), "m1 reports")
	f.must(f.s.ReportDeploymentLoad(f.ctx, "m2", map[domain.DeploymentID]float64{"d1": 2}, at(10)), "m2 reports")
	f.must(f.s.ReportDeploymentLoad(f.ctx, "m3", map[domain.DeploymentID]float64{"d1": 7}, at(2)), "m3 reports, long ago")
	load, err := f.s.DeploymentLoad(f.ctx, at(8))
	f.must(err, "load")
	if diff := cmp.Diff(map[domain.DeploymentID]float64{"d1": 3.5, "d2": 0.5}, load); diff != "" {
		t.Errorf("load since 8s: summed over fresh reports, unknown deployments left out (-want +got):\n%s", diff)
	}
	// A later report replaces the manager's earlier one.
	f.must(f.s.ReportDeploymentLoad(f.ctx, "m1", map[domain.DeploymentID]float64{"d1": 0}, at(11)), "m1 reports again")
	load, _ = f.s.DeploymentLoad(f.ctx, at(8))
	if load["d1"] != 2 {
		t.Errorf("d1 load %v after m1's new report, want 2", load["d1"])
	}
}

// backoff is a failed-start backoff whose result names the count.
func backoff(failures int) time.Duration { return time.Duration(failures) * time.Minute }

func testMoveDeployment(t *testing.T, e Engine) {
	f := newFixture(t, e)
	d := deployment("d1", "llm", "alice", 2)
	f.must(f.s.CreateDeployment(f.ctx, d), "create d1")
	pending := []domain.DeploymentStatus{domain.DeploymentPending}
	f.must(f.s.MoveDeployment(f.ctx, "d1", pending, domain.DeploymentScaling, at(3)), "move d1")
	wantErr(t, f.s.MoveDeployment(f.ctx, "d1", pending, domain.DeploymentScaling, at(4)), store.ErrGuardFailed, "move twice")
	wantErr(t, f.s.MoveDeployment(f.ctx, "ghost", pending, domain.DeploymentScaling, at(4)), store.ErrNotFound, "move unknown")

	// A user's change made after the mover read d is kept: a move writes
	// the status alone.
	user := d
	user.Status, user.StatusChangedAt = domain.DeploymentScaling, at(3)
	user.Replicas, user.MaxSurge = 5, 2
	f.must(f.s.UpdateDeployment(f.ctx, user, []domain.DeploymentStatus{domain.DeploymentScaling}), "user update")
	f.must(f.s.MoveDeployment(f.ctx, "d1", []domain.DeploymentStatus{domain.DeploymentScaling}, domain.DeploymentReady, at(5)), "ready")
	want := user
	want.Status, want.StatusChangedAt = domain.DeploymentReady, at(5)
	f.wantDeployment(want, "after a user's update and a move")
}

func testDeploymentStartFailures(t *testing.T, e Engine) {
	f := newFixture(t, e)
	d := deployment("d1", "llm", "alice", 2)
	f.must(f.s.CreateDeployment(f.ctx, d), "create d1")

	got, err := f.s.CountStartFailure(f.ctx, "d1", 1, at(10), backoff)
	f.must(err, "count first")
	stored, err := f.s.GetDeployment(f.ctx, "d1")
	f.must(err, "get d1")
	if diff := cmp.Diff(stored, got); diff != "" {
		t.Errorf("counted row against the stored one (-stored +returned):\n%s", diff)
	}
	want := d
	want.StartFailures, want.NextStartAt = 1, at(10).Add(time.Minute)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after one failed start (-want +got):\n%s", diff)
	}
	// The count is the stored one plus one, whatever the caller last saw.
	got, err = f.s.CountStartFailure(f.ctx, "d1", 1, at(20), backoff)
	f.must(err, "count second")
	if got.StartFailures != 2 || !got.NextStartAt.Equal(at(20).Add(2*time.Minute)) {
		t.Errorf("after two failed starts: %d, next start %s; want 2 and at(20)+2m", got.StartFailures, got.NextStartAt)
	}
	_, err = f.s.CountStartFailure(f.ctx, "d1", 7, at(20), backoff)
	wantErr(t, err, store.ErrGuardFailed, "count a failure of another revision")
	_, err = f.s.CountStartFailure(f.ctx, "ghost", 1, at(20), backoff)
	wantErr(t, err, store.ErrNotFound, "count for an unknown deployment")

	f.must(f.s.ResetStartFailures(f.ctx, "d1"), "reset")
	f.wantDeployment(d, "after the reset")
	wantErr(t, f.s.ResetStartFailures(f.ctx, "ghost"), store.ErrNotFound, "reset an unknown deployment")
}

// testConcurrentStartFailures: counters on two store instances, as on
// two managers, lose no failed start, and each sees a count of its own.
func testConcurrentStartFailures(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.must(f.s.CreateDeployment(f.ctx, deployment("d1", "llm", "alice", 2)), "create d1")
	stores := []store.Store{f.s, f.open(Options{Registry: f.reg})}
	const perWorker = 15
	var (
		mu     sync.Mutex
		counts []int
		wg     sync.WaitGroup
	)
	for w := range 4 {
		st := stores[w%len(stores)]
		wg.Go(func() {
			for range perWorker {
				d, err := st.CountStartFailure(f.ctx, "d1", 1, at(100), backoff)
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				mu.Lock()
				counts = append(counts, d.StartFailures)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Ints(counts)
	want := make([]int, 4*perWorker)
	for i := range want {
		want[i] = i + 1
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("counts the counters saw (-want +got):\n%s", diff)
	}
	got, err := f.s.GetDeployment(f.ctx, "d1")
	f.must(err, "get d1")
	if got.StartFailures != len(want) || !got.NextStartAt.Equal(at(100).Add(backoff(len(want)))) {
		t.Errorf("stored %d failed starts, next start %s; want %d and at(100)+%s",
			got.StartFailures, got.NextStartAt, len(want), backoff(len(want)))
	}
}

func testScaleDeployment(t *testing.T, e Engine) {
	f := newFixture(t, e)
	d := deployment("d1", "llm", "alice", 2)
	d.Autoscale = &domain.Autoscale{Min: 1, Max: 4, Target: 2, Cooldown: time.Minute}
	f.must(f.s.CreateDeployment(f.ctx, d), "create d1")
	pending := []domain.DeploymentStatus{domain.DeploymentPending}
	f.must(f.s.ScaleDeployment(f.ctx, "d1", 4, at(5), pending), "scale d1")
	wantErr(t, f.s.ScaleDeployment(f.ctx, "d1", 3, at(6), []domain.DeploymentStatus{domain.DeploymentReady}),
		store.ErrGuardFailed, "scale in another status")
	wantErr(t, f.s.ScaleDeployment(f.ctx, "ghost", 3, at(6), pending), store.ErrNotFound, "scale unknown")
	want := d
	want.Replicas, want.ScaledAt = 4, at(5)
	f.wantDeployment(want, "after scaling")

	// A user who turns autoscaling off keeps the replicas they set,
	// whatever the autoscaler decided from what it read before.
	user := want
	user.Autoscale, user.Replicas, user.MaxSurge = nil, 2, 3
	f.must(f.s.UpdateDeployment(f.ctx, user, pending), "user turns autoscaling off")
	wantErr(t, f.s.ScaleDeployment(f.ctx, "d1", 1, at(7), pending), store.ErrGuardFailed, "scale without autoscaling")
	f.wantDeployment(user, "after autoscaling off")
}

// testUserUpdateLeavesControllerColumns: a user's write made from a copy
// read before the controller's writes keeps the backoff and the time
// autoscaling scaled; only a new revision clears the backoff.
func testUserUpdateLeavesControllerColumns(t *testing.T, e Engine) {
	f := newFixture(t, e)
	d := deployment("d1", "llm", "alice", 2)
	d.Autoscale = &domain.Autoscale{Min: 1, Max: 4, Target: 2, Cooldown: time.Minute}
	f.must(f.s.CreateDeployment(f.ctx, d), "create d1")
	read := d // the user's copy, read before the controller wrote

	_, err := f.s.CountStartFailure(f.ctx, "d1", 1, at(10), backoff)
	f.must(err, "count")
	pending := []domain.DeploymentStatus{domain.DeploymentPending}
	f.must(f.s.ScaleDeployment(f.ctx, "d1", 3, at(11), pending), "scale")

	user := read
	user.MaxSurge = 2
	f.must(f.s.UpdateDeployment(f.ctx, user, pending), "user update")
	got, err := f.s.GetDeployment(f.ctx, "d1")
	f.must(err, "get d1")
	want := user
	want.StartFailures, want.NextStartAt, want.ScaledAt = 1, at(10).Add(time.Minute), at(11)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after a user's update from an older copy (-want +got):\n%s", diff)
	}

	// A new revision's failed starts are its own.
	user = got
	prev := user.Spec
	user.Spec.Image, user.Revision, user.PrevSpec = "http-echo:v2", 2, &prev
	f.must(f.s.UpdateDeployment(f.ctx, user, pending), "user respec")
	want = user
	want.StartFailures, want.NextStartAt = 0, time.Time{}
	f.wantDeployment(want, "after a new revision")
}

func testEndRollout(t *testing.T, e Engine) {
	f := newFixture(t, e)
	deploying := func(id domain.DeploymentID) domain.Deployment {
		d := deployment(string(id), string(id), "alice", 2)
		prev := d.Spec
		d.Status, d.Revision, d.PrevSpec = domain.DeploymentDeploying, 2, &prev
		d.Spec.Image = "http-echo:v2"
		f.must(f.s.CreateDeployment(f.ctx, d), "create %s", id)
		return d
	}
	done, failed := deploying("done"), deploying("failed")

	wantErr(t, f.s.EndRollout(f.ctx, "done", 1, domain.DeploymentReady, at(5), false), store.ErrGuardFailed, "end another revision's rollout")
	f.must(f.s.EndRollout(f.ctx, "done", 2, domain.DeploymentReady, at(5), false), "complete")
	wantErr(t, f.s.EndRollout(f.ctx, "done", 2, domain.DeploymentReady, at(6), false), store.ErrGuardFailed, "complete twice")
	wantErr(t, f.s.EndRollout(f.ctx, "ghost", 2, domain.DeploymentReady, at(6), false), store.ErrNotFound, "end unknown")
	want := done
	want.Status, want.StatusChangedAt, want.PrevSpec = domain.DeploymentReady, at(5), nil
	f.wantDeployment(want, "after a rollout completed")

	// A user's replicas during the rollout survive its rollback.
	_, err := f.s.CountStartFailure(f.ctx, "failed", 2, at(4), backoff)
	f.must(err, "count")
	user := failed
	user.Replicas = 5
	f.must(f.s.UpdateDeployment(f.ctx, user, []domain.DeploymentStatus{domain.DeploymentDeploying}), "user scales")
	f.must(f.s.EndRollout(f.ctx, "failed", 2, domain.DeploymentScaling, at(5), true), "roll back")
	want = user
	want.Status, want.StatusChangedAt = domain.DeploymentScaling, at(5)
	want.Spec, want.Revision, want.PrevSpec = *failed.PrevSpec, 1, nil
	f.wantDeployment(want, "after a rollback")
}
