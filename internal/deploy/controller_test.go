package deploy

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
)

// These tests drive the controller pass by pass on a real SQLite store
// with an injected clock, so each threshold and bound can be stepped
// over exactly. The one fake is at the edge: instantSessions stands in
// for admission, the coordinator and an agent, putting a route's session
// straight to RUNNING (serving a real httptest server) or ending it.

type testClock struct{ now time.Time }

func (c *testClock) Now() time.Time { return c.now }

type instantSessions struct {
	t     *testing.T
	st    *sqlite.Store
	reg   *domain.Registry
	serve string // host:port the sessions' kernels serve
	// pending leaves new sessions PENDING (an unplaceable replica).
	pending bool
	// agent is where new sessions are placed ("a1" when empty).
	agent domain.AgentID
	now   func() time.Time
}

func (s *instantSessions) Admit(ctx context.Context, r admit.Request) (domain.Session, error) {
	req, err := s.reg.ParseSlots(map[string]string{"cpu": "1"})
	if err != nil {
		return domain.Session{}, err
	}
	now := s.now()
	id := r.ID
	sess := domain.Session{ID: id, Name: r.Name, Owner: r.Owner, Type: domain.TypeInference, Image: r.Image,
		Architecture: "x86_64", ResourceGroup: "default", ClusterMode: domain.SingleNode, ClusterSize: 1,
		Requested: req, Status: domain.SessionPending, CreatedAt: now, StatusChangedAt: now}
	k := domain.Kernel{ID: domain.KernelID(id + "-k0"), SessionID: id, ClusterRole: domain.RoleMain, Image: r.Image,
		Architecture: "x86_64", Requested: req.Clone(), Status: domain.KernelPending, StatusChangedAt: now}
	if err := s.st.CreateSession(ctx, sess, []domain.Kernel{k}); err != nil {
		return domain.Session{}, err
	}
	if s.pending {
		return sess, nil
	}
	plan := framework.Plan{Group: "default", Placements: []framework.Placement{{Session: id,
		Kernels: []framework.KernelPlacement{{Kernel: k.ID, Agent: cmp.Or(s.agent, "a1"), Slots: req.Clone()}}}}}
	if res, err := s.st.ApplyPlan(ctx, plan, now); err != nil || len(res.Applied) != 1 {
		return domain.Session{}, fmt.Errorf("place %s: %v %+v", id, err, res.Rejected)
	}
	for _, step := range []struct {
		from domain.SessionStatus
		to   domain.Transition
	}{
		{domain.SessionScheduled, domain.Transition{Session: domain.SessionPreparing, Kernel: domain.KernelPreparing}},
		{domain.SessionPreparing, domain.Transition{Session: domain.SessionPrepared, Kernel: domain.KernelPrepared}},
		{domain.SessionPrepared, domain.Transition{Session: domain.SessionCreating, Kernel: domain.KernelCreating}},
	} {
		if _, err := s.st.TransitionSessions(ctx, []domain.SessionID{id}, []domain.SessionStatus{step.from}, step.to, "", now); err != nil {
			return domain.Session{}, err
		}
	}
	host, port, _ := net.SplitHostPort(s.serve)
	p, _ := strconv.Atoi(port)
	if _, err := s.st.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: []domain.KernelStatus{domain.KernelCreating},
		To: domain.KernelRunning, ServicePorts: []domain.ServicePort{{Name: "http", Protocol: "http", Host: host, Port: p}}, Now: now}); err != nil {
		return domain.Session{}, err
	}
	_, err = s.st.TransitionSessions(ctx, []domain.SessionID{id}, []domain.SessionStatus{domain.SessionCreating},
		domain.Transition{Session: domain.SessionRunning}, "", now)
	return sess, err
}

func (s *instantSessions) Terminate(ctx context.Context, id domain.SessionID, reason string, _ bool) (store.SessionWithKernels, error) {
	return store.SessionWithKernels{}, s.end(ctx, id, reason)
}

// end ends a session at once, whatever its status, as a kernel's exit or
// a user's DELETE followed by its agent's answer would.
func (s *instantSessions) end(ctx context.Context, id domain.SessionID, reason string) error {
	now := s.now()
	if _, err := s.st.TransitionSessions(ctx, []domain.SessionID{id}, []domain.SessionStatus{domain.SessionPending},
		domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, reason, now); err != nil {
		return err
	}
	live := []domain.SessionStatus{domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared,
		domain.SessionCreating, domain.SessionRunning}
	if _, err := s.st.TransitionSessions(ctx, []domain.SessionID{id}, live,
		domain.Transition{Session: domain.SessionTerminating, Kernel: domain.KernelTerminating}, reason, now); err != nil {
		return err
	}
	_, err := s.st.TransitionSessions(ctx, []domain.SessionID{id}, []domain.SessionStatus{domain.SessionTerminating},
		domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}, reason, now)
	return err
}

type harness struct {
	t       *testing.T
	ctx     context.Context
	st      *sqlite.Store
	clock   *testClock
	c       *Controller
	sess    *instantSessions
	healthy atomic.Bool
	dep     domain.Deployment
}

func newHarness(t *testing.T, hc domain.HealthCheck, cfg Config) *harness {
	t.Helper()
	ctx := context.Background()
	reg := domain.DefaultRegistry()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), sqlite.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, ctx: ctx, st: st, clock: &testClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	h.healthy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	if err := st.PutResourceGroup(ctx, domain.ResourceGroup{Name: "default", State: domain.GroupActive, Sequencer: "fifo",
		Selector: "concentrated", HeadOfLine: domain.HOLSkip, MaxRetries: 3, Timeouts: domain.DefaultTimeouts()}); err != nil {
		t.Fatal(err)
	}
	capacity, _ := reg.ParseSlots(map[string]string{"cpu": "64", "mem": "64g"})
	if _, err := st.RegisterAgent(ctx, domain.Agent{ID: "a1", ResourceGroup: "default", Address: "http://127.0.0.1:1",
		Architecture: "x86_64", Runtime: "process", Status: domain.AgentAlive, Schedulable: true, Capacity: capacity}, h.clock.now); err != nil {
		t.Fatal(err)
	}
	h.sess = &instantSessions{t: t, st: st, reg: reg, serve: srv.Listener.Addr().String(), now: func() time.Time { return h.clock.now }}
	h.c = New(Deps{Store: st, Admit: h.sess, Sessions: h.sess, Clock: h.clock}, cfg)
	h.dep = domain.Deployment{ID: "d1", Name: "m", Owner: domain.Owner{User: "alice", Project: "p", Domain: "d"},
		Status: domain.DeploymentPending, StatusChangedAt: h.clock.now, CreatedAt: h.clock.now, Replicas: 1,
		Spec: domain.DeploymentSpec{Image: "http-echo"}, Health: hc, Revision: 1, MaxSurge: 1}
	if err := st.CreateDeployment(ctx, h.dep); err != nil {
		t.Fatal(err)
	}
	return h
}

// step advances the clock by d and makes one pass.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.clock.now = h.clock.now.Add(d)
	if err := h.c.Step(h.ctx); err != nil {
		h.t.Fatalf("pass at %s: %v", h.clock.now.Format(time.TimeOnly), err)
	}
}

func (h *harness) route() domain.Route {
	h.t.Helper()
	rs, err := h.st.ListRoutes(h.ctx, store.RouteFilter{Deployments: []domain.DeploymentID{"d1"}})
	if err != nil {
		h.t.Fatal(err)
	}
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Status != domain.RouteTerminated {
			return rs[i]
		}
	}
	h.t.Fatalf("no live route among %+v", rs)
	return domain.Route{}
}

func (h *harness) want(what string, st domain.RouteStatus) domain.Route {
	h.t.Helper()
	r := h.route()
	if r.Status != st {
		h.t.Fatalf("%s: route is %s (%s), want %s", what, r.Status, r.StatusReason, st)
	}
	return r
}

func (h *harness) history(route domain.RouteID, handler domain.HandlerName, res domain.RouteResult) bool {
	hs, err := h.st.DeploymentHistory(h.ctx, "d1")
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range hs {
		if e.Route == route && e.Cause == handler && e.Result == res {
			return true
		}
	}
	return false
}

func TestHealthChecksCountConsecutiveResultsAndGoStale(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: 10 * time.Second, Timeout: time.Second, InitialDelay: 30 * time.Second,
		SuccessThreshold: 2, FailureThreshold: 3}
	h := newHarness(t, hc, Config{EvictionGrace: time.Hour})
	h.step(0) // PENDING → SCALING, one route started, its session RUNNING at once
	h.want("started", domain.RouteProvisioning)
	// Its session runs: checked in the same pass, initial delay or not;
	// one pass < success threshold 2, so it stays PROVISIONING.
	h.step(time.Second)
	r := h.want("session running, one pass", domain.RouteProvisioning)
	if r.Endpoint != h.sess.serve {
		t.Fatalf("endpoint %q, want %q", r.Endpoint, h.sess.serve)
	}
	if r.Successes != 1 {
		t.Fatalf("successes %d, want 1", r.Successes)
	}
	h.step(5 * time.Second) // before the interval: no check
	if r := h.route(); r.Successes != 1 {
		t.Fatalf("checked again before the interval: successes %d", r.Successes)
	}
	h.step(5 * time.Second)
	h.want("two passes", domain.RouteHealthy)
	if d, _ := h.st.GetDeployment(h.ctx, "d1"); d.Status != domain.DeploymentReady {
		t.Fatalf("deployment %s with its one replica HEALTHY, want READY", d.Status)
	}

	h.healthy.Store(false)
	h.step(10 * time.Second)
	h.step(10 * time.Second)
	if r := h.want("two failures < threshold 3", domain.RouteHealthy); r.Failures != 2 {
		t.Fatalf("failures %d, want 2", r.Failures)
	}
	h.step(10 * time.Second)
	r = h.want("three failures", domain.RouteUnhealthy)
	if d, _ := h.st.GetDeployment(h.ctx, "d1"); d.Status != domain.DeploymentScaling {
		t.Fatalf("deployment %s with its replica UNHEALTHY, want SCALING (ReconcileDeployment)", d.Status)
	}
	h.healthy.Store(true)
	h.step(10 * time.Second)
	h.step(10 * time.Second)
	h.want("recovered after two passes", domain.RouteHealthy)

	// No fresh result for longer than 3 intervals + the timeout: STALE
	// makes it DEGRADED, and one pass is not yet the two HEALTHY needs.
	h.clock.now = h.clock.now.Add(45 * time.Second)
	h.step(0)
	h.want("stale", domain.RouteDegraded)
	if !h.history(r.ID, domain.HandlerHealthCheckRoute, domain.RouteStale) {
		t.Errorf("no STALE in the history")
	}
	h.step(10 * time.Second)
	h.want("fresh again", domain.RouteHealthy)
}

// TestInitialDelayForgivesFailuresNotSuccesses is issue 32's first
// request after 31 s: a route is probed as soon as its session runs and
// serves on its first passing check; failures within the initial delay
// are recorded but not counted, and it shows PROVISIONING, not DEGRADED,
// until its first result.
func TestInitialDelayForgivesFailuresNotSuccesses(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: 2 * time.Second, Timeout: time.Second, InitialDelay: 30 * time.Second,
		SuccessThreshold: 1, FailureThreshold: 1}
	h := newHarness(t, hc, Config{EvictionGrace: time.Hour})
	h.healthy.Store(false) // the server is still coming up
	h.step(0)
	h.step(time.Second)
	r := h.want("failing within the initial delay", domain.RouteProvisioning)
	if r.CheckedAt.IsZero() || r.Failures != 0 {
		t.Fatalf("checked at %v with %d failures counted, want a check and none counted", r.CheckedAt, r.Failures)
	}
	if !h.history(r.ID, domain.HandlerHealthCheckRoute, domain.RouteFailure) {
		t.Errorf("the forgiven failure is not in the history")
	}
	h.step(2 * time.Second)
	h.want("still within the delay", domain.RouteProvisioning)
	h.healthy.Store(true)
	h.step(2 * time.Second) // 5 s in: the first success is not held back
	h.want("serving", domain.RouteHealthy)

	// A second deployment whose server never comes up: failures count
	// once the initial delay is over.
	h2 := newHarness(t, hc, Config{EvictionGrace: time.Hour})
	h2.healthy.Store(false)
	h2.step(0)
	h2.step(time.Second)
	for range 14 {
		h2.step(2 * time.Second)
	}
	h2.want("29 s in, within the delay", domain.RouteProvisioning)
	h2.step(2 * time.Second)
	h2.want("past the delay, one failure at threshold 1", domain.RouteUnhealthy)
}

func TestUnhealthyRouteIsEvictedAfterItsGraceAndReplaced(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	h := newHarness(t, hc, Config{EvictionGrace: 5 * time.Second, DrainGrace: time.Second})
	h.step(0)
	h.step(time.Second)
	h.step(time.Second)
	first := h.want("serving", domain.RouteHealthy)
	h.healthy.Store(false)
	h.step(time.Second)
	h.want("failed once", domain.RouteUnhealthy)
	h.step(4 * time.Second)
	h.want("within the grace", domain.RouteUnhealthy)
	h.healthy.Store(true) // the replacement will pass
	h.step(2 * time.Second)
	if !h.history(first.ID, domain.HandlerRouteEviction, domain.RouteSuccess) {
		t.Fatalf("route was not evicted past its grace")
	}
	sk, err := h.st.GetSession(h.ctx, first.Session)
	if err != nil || !sk.Session.Status.Terminal() {
		t.Fatalf("evicted route's session is %v (%v), want ended", sk.Session.Status, err)
	}
	for range 4 {
		h.step(time.Second)
	}
	if r := h.want("replaced", domain.RouteHealthy); r.ID == first.ID {
		t.Fatalf("the evicted route serves again")
	}
	rs, _ := h.st.ListRoutes(h.ctx, store.RouteFilter{Deployments: []domain.DeploymentID{"d1"}, Statuses: []domain.RouteStatus{domain.RouteTerminated}})
	if len(rs) != 1 || rs[0].ID != first.ID {
		t.Fatalf("terminated routes %+v, want the evicted one", rs)
	}
}

func TestProvisioningIsBoundedAndFailedStartsBackOff(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	h := newHarness(t, hc, Config{ProvisionTimeout: time.Minute, BackoffBase: 10 * time.Second, BackoffMax: 25 * time.Second})
	h.sess.pending = true // no agent ever takes it
	h.step(0)
	first := h.want("started", domain.RouteProvisioning)
	h.step(59 * time.Second)
	h.want("within the bound", domain.RouteProvisioning)
	h.step(2 * time.Second)
	h.want("past the bound", domain.RouteFailedToStart)
	sk, _ := h.st.GetSession(h.ctx, first.Session)
	if sk.Session.Status != domain.SessionCancelled {
		t.Fatalf("the failed route's session is %s, want CANCELLED", sk.Session.Status)
	}
	d, _ := h.st.GetDeployment(h.ctx, "d1")
	if d.StartFailures != 1 || !d.NextStartAt.Equal(h.clock.now.Truncate(time.Microsecond).Add(10*time.Second)) {
		t.Fatalf("backoff: %d failures, next start %s, want 1 and now+10s", d.StartFailures, d.NextStartAt)
	}
	h.step(9 * time.Second)
	if r := h.route(); r.ID != first.ID {
		t.Fatalf("a new route started during the backoff")
	}
	h.step(2 * time.Second) // backoff over: the failed route ends, one more starts
	second := h.want("retried", domain.RouteProvisioning)
	if second.ID == first.ID {
		t.Fatal("no new route after the backoff")
	}
	for _, want := range []time.Duration{20 * time.Second, 25 * time.Second, 25 * time.Second} {
		got := Config{BackoffBase: 10 * time.Second, BackoffMax: 25 * time.Second}.Backoff(d.StartFailures + 1)
		d.StartFailures++
		if got != want {
			t.Errorf("backoff after %d failures = %s, want %s", d.StartFailures, got, want)
		}
	}
}

func TestScaleInEndsRoutesNotServingFirst(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	routes := []*domain.Route{
		{ID: "healthy-old", Status: domain.RouteHealthy, CreatedAt: t0},
		{ID: "healthy-new", Status: domain.RouteHealthy, CreatedAt: t0.Add(time.Hour)},
		{ID: "degraded", Status: domain.RouteDegraded, CreatedAt: t0},
		{ID: "provisioning", Status: domain.RouteProvisioning, CreatedAt: t0.Add(2 * time.Hour)},
		{ID: "unhealthy", Status: domain.RouteUnhealthy, CreatedAt: t0.Add(3 * time.Hour)},
	}
	sorted := append([]*domain.Route(nil), routes...)
	slices.SortFunc(sorted, scalingOrder)
	var got []domain.RouteID
	for _, r := range sorted {
		got = append(got, r.ID)
	}
	want := []domain.RouteID{"provisioning", "unhealthy", "degraded", "healthy-old", "healthy-new"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scale-in order %v, want %v", got, want)
	}
}

// A session that comes up and dies before its route passes the success
// threshold is a failed start too: without this, an image that starts
// and crashes after a second is replaced at once, in a hot loop.
func TestRouteThatDiesBeforeServingBacksOff(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 3, FailureThreshold: 3}
	h := newHarness(t, hc, Config{BackoffBase: 10 * time.Second, BackoffMax: 25 * time.Second, DrainGrace: time.Second})
	routes := func() []domain.Route {
		t.Helper()
		rs, err := h.st.ListRoutes(h.ctx, store.RouteFilter{Deployments: []domain.DeploymentID{"d1"}})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	crash := func(r domain.Route) {
		t.Helper()
		if err := h.sess.end(h.ctx, r.Session, "kernel exited with code 1"); err != nil {
			t.Fatal(err)
		}
	}
	backoff := func(what string, failures int, until time.Time) {
		t.Helper()
		d, err := h.st.GetDeployment(h.ctx, "d1")
		if err != nil {
			t.Fatal(err)
		}
		if d.StartFailures != failures || !d.NextStartAt.Equal(until) {
			t.Fatalf("%s: %d failed starts, next start %s; want %d and %s", what, d.StartFailures, d.NextStartAt, failures, until)
		}
	}

	h.step(0)
	h.step(time.Second) // RUNNING: still PROVISIONING, first check passes: 1 of 3
	first := h.want("running", domain.RouteProvisioning)
	crash(first)
	h.step(time.Second)
	crashedAt := h.clock.now
	backoff("first crash", 1, crashedAt.Add(10*time.Second))
	if rs := routes(); len(rs) != 1 {
		t.Fatalf("%d routes right after the crash, want the crashed one alone (no replacement during the backoff)", len(rs))
	}
	if !h.history(first.ID, domain.HandlerProvisioningRoute, domain.RouteFailure) {
		t.Errorf("the crashed route's failed start is not in its history")
	}
	h.step(8 * time.Second)
	if rs := routes(); len(rs) != 1 || rs[0].Status != domain.RouteFailedToStart {
		t.Fatalf("routes %+v within the backoff, want the crashed one alone, FAILED_TO_START", rs)
	}
	h.step(2 * time.Second) // the backoff is over: one replacement
	second := h.want("replaced after the backoff", domain.RouteProvisioning)

	// The replacement crashes the same way: the wait doubles.
	h.step(time.Second)
	h.want("second running", domain.RouteProvisioning)
	crash(second)
	h.step(time.Second)
	backoff("second crash", 2, h.clock.now.Add(20*time.Second))
	h.step(19 * time.Second)
	if rs := routes(); len(rs) != 2 {
		t.Fatalf("%d routes within the second backoff, want 2", len(rs))
	}
	h.step(2 * time.Second)
	third := h.want("replaced after the second backoff", domain.RouteProvisioning)

	// One that serves proves the spec and resets the count; its own end
	// later is no failed start, and it is replaced at once.
	h.step(time.Second)
	h.step(time.Second)
	h.step(time.Second)
	h.want("third serving", domain.RouteHealthy)
	backoff("served", 0, time.Time{})
	crash(third)
	h.step(time.Second)
	backoff("served route ended", 0, time.Time{})
	if r := h.route(); r.ID == third.ID || r.Status != domain.RouteProvisioning {
		t.Fatalf("route %s is %s after a served route ended, want its replacement PROVISIONING at once", r.ID, r.Status)
	}
}

// TestOneProbeAtATimeWhileStartsFail: once starts have failed, a
// deployment of two replicas tries one new route at a time and waits for
// its verdict (HEALTHY, or a failed start) before starting another, even
// when the routes that failed have left the live set at once (they died
// before serving) and the backoff has passed.
func TestOneProbeAtATimeWhileStartsFail(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 3, FailureThreshold: 3}
	h := newHarness(t, hc, Config{BackoffBase: 10 * time.Second, BackoffMax: 25 * time.Second, DrainGrace: time.Second})
	d := h.dep
	d.Replicas = 2
	if err := h.st.UpdateDeployment(h.ctx, d, []domain.DeploymentStatus{domain.DeploymentPending}); err != nil {
		t.Fatal(err)
	}
	unproven := func() []domain.Route {
		t.Helper()
		rs, err := h.st.ListRoutes(h.ctx, store.RouteFilter{Deployments: []domain.DeploymentID{"d1"}})
		if err != nil {
			t.Fatal(err)
		}
		var out []domain.Route
		for _, r := range rs {
			if r.Status == domain.RouteProvisioning || r.Status == domain.RouteDegraded {
				out = append(out, r)
			}
		}
		return out
	}
	h.step(0)
	h.step(time.Second)
	first := unproven()
	if len(first) != 2 {
		t.Fatalf("%d routes starting, want both replicas", len(first))
	}
	for _, r := range first {
		if err := h.sess.end(h.ctx, r.Session, "kernel exited with code 1"); err != nil {
			t.Fatal(err)
		}
	}
	h.step(time.Second) // both died before serving: 2 failed starts, 20 s
	h.step(21 * time.Second)
	if got := unproven(); len(got) != 1 {
		t.Fatalf("%d routes after the backoff, want one probe", len(got))
	}
	for range 2 {
		h.step(time.Second) // the probe runs, 1 and 2 of its 3 checks
		if got := unproven(); len(got) != 1 {
			t.Fatalf("%d unproven routes while the probe has no verdict, want it alone: %+v", len(got), got)
		}
	}
	h.step(time.Second) // third check: HEALTHY, the count resets
	h.step(time.Second)
	if got := unproven(); len(got) != 1 {
		t.Fatalf("%d routes starting after the probe served, want the second replica", len(got))
	}
}

// TestOldRevisionRouteEndIsNoFailedStart: a route of an earlier spec that
// dies before serving says nothing of the current spec, so it does not
// count as a failed start (a rollout would read one as its new routes
// failing, and roll back).
func TestOldRevisionRouteEndIsNoFailedStart(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 3, FailureThreshold: 3}
	h := newHarness(t, hc, Config{BackoffBase: 10 * time.Second, BackoffMax: 25 * time.Second, DrainGrace: time.Second})
	h.step(0)
	h.step(time.Second)
	old := h.want("running", domain.RouteProvisioning)
	d, err := h.st.GetDeployment(h.ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	d.Revision++ // a new spec, stored as a user's update stores it
	if err := h.st.UpdateDeployment(h.ctx, d, []domain.DeploymentStatus{d.Status}); err != nil {
		t.Fatal(err)
	}
	if err := h.sess.end(h.ctx, old.Session, "kernel exited with code 1"); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	if got, err := h.st.GetDeployment(h.ctx, "d1"); err != nil || got.StartFailures != 0 {
		t.Fatalf("after an old revision's route died: %d failed starts (%v), want 0", got.StartFailures, err)
	}
}

// racingUser is the controller's store with a user's PATCH landing right
// after each pass has read the deployments, before it writes any of them.
type racingUser struct {
	Store
	patch func(ctx context.Context)
}

func (s *racingUser) ListDeployments(ctx context.Context, f store.DeploymentFilter) ([]domain.Deployment, error) {
	ds, err := s.Store.ListDeployments(ctx, f)
	if err == nil {
		s.patch(ctx)
	}
	return ds, err
}

// raceUser makes every later pass of h's controller raced by a user's
// PATCH that raises max_surge by one, written as the API writes it:
// re-read, change, guarded by the status read. The stored deployment it
// returns fails t unless every such raise is there.
func raceUser(t *testing.T, h *harness, cfg Config) (stored func(what string) domain.Deployment) {
	t.Helper()
	patches := 0
	race := &racingUser{Store: h.st, patch: func(ctx context.Context) {
		d, err := h.st.GetDeployment(ctx, "d1")
		if err != nil {
			t.Fatal(err)
		}
		d.MaxSurge++
		if err := h.st.UpdateDeployment(ctx, d, []domain.DeploymentStatus{d.Status}); err != nil {
			t.Fatalf("user's update: %v", err)
		}
		patches++
	}}
	base, err := h.st.GetDeployment(h.ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	h.c = New(Deps{Store: race, Admit: h.sess, Sessions: h.sess, Clock: h.clock}, cfg)
	return func(what string) domain.Deployment {
		t.Helper()
		d, err := h.st.GetDeployment(h.ctx, "d1")
		if err != nil {
			t.Fatal(err)
		}
		if want := base.MaxSurge + patches; d.MaxSurge != want {
			t.Fatalf("%s: max_surge %d, want %d: a user's update was overwritten", what, d.MaxSurge, want)
		}
		return d
	}
}

// TestUsersChangeDuringAPassIsKept: a user's update made between a pass's
// read of a deployment and its writes (moves, a failed start's backoff,
// its reset) survives them, and the controller's own writes land too.
func TestUsersChangeDuringAPassIsKept(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 3, FailureThreshold: 3}
	cfg := Config{BackoffBase: 10 * time.Second, BackoffMax: 25 * time.Second, DrainGrace: time.Second}
	h := newHarness(t, hc, cfg)
	stored := raceUser(t, h, cfg)

	h.step(0) // PENDING → SCALING, one route started
	if d := stored("scaling"); d.Status != domain.DeploymentScaling {
		t.Fatalf("deployment is %s, want SCALING", d.Status)
	}
	h.step(time.Second)
	first := h.want("running", domain.RouteProvisioning)
	if err := h.sess.end(h.ctx, first.Session, "kernel exited with code 1"); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second) // it died before serving: a failed start
	if d := stored("backed off"); d.StartFailures != 1 || !d.NextStartAt.Equal(h.clock.now.Add(10*time.Second)) {
		t.Fatalf("backoff: %d failed starts, next start %s; want 1 and now+10s", d.StartFailures, d.NextStartAt)
	}
	h.step(11 * time.Second) // the replacement starts
	for range 4 {            // its three checks pass: HEALTHY, the count reset, READY
		h.step(time.Second)
	}
	h.want("replacement serving", domain.RouteHealthy)
	if d := stored("served"); d.StartFailures != 0 || !d.NextStartAt.IsZero() || d.Status != domain.DeploymentReady {
		t.Fatalf("after serving: %s with %d failed starts, next start %s; want READY, 0 and none",
			d.Status, d.StartFailures, d.NextStartAt)
	}
}

// TestUsersChangeDuringAutoscalingIsKept: autoscaling writes the replicas
// it decided on, not the rest of the deployment as its pass read it.
func TestUsersChangeDuringAutoscalingIsKept(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 3, FailureThreshold: 3}
	cfg := Config{BackoffBase: 10 * time.Second, BackoffMax: 25 * time.Second, DrainGrace: time.Second}
	h := newHarness(t, hc, cfg)
	d := h.dep
	d.Autoscale = &domain.Autoscale{Min: 1, Max: 4, Target: 1, Cooldown: time.Minute}
	if err := h.st.UpdateDeployment(h.ctx, d, []domain.DeploymentStatus{domain.DeploymentPending}); err != nil {
		t.Fatal(err)
	}
	h.step(0) // SCALING
	stored := raceUser(t, h, cfg)
	h.clock.now = h.clock.now.Add(time.Second)
	if err := h.st.ReportDeploymentLoad(h.ctx, "m1", map[domain.DeploymentID]float64{"d1": 3}, h.clock.now); err != nil {
		t.Fatal(err)
	}
	h.step(0) // 3 in flight at 1 per route: 3 replicas
	if d := stored("autoscaled"); d.Replicas != 3 || !d.ScaledAt.Equal(h.clock.now) {
		t.Fatalf("after autoscaling: %d replicas, scaled at %s; want 3 and now", d.Replicas, d.ScaledAt)
	}
}

// TestDrainMovesRoutesFirst is issue 32's drain that killed both
// replicas at once: routes on a draining agent are replaced elsewhere
// first, and each ends only once the deployment keeps its HEALTHY
// replicas without it.
func TestDrainMovesRoutesFirst(t *testing.T) {
	hc := domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 2, FailureThreshold: 3}
	h := newHarness(t, hc, Config{DrainGrace: time.Second})
	capacity, _ := domain.DefaultRegistry().ParseSlots(map[string]string{"cpu": "64", "mem": "64g"})
	if _, err := h.st.RegisterAgent(h.ctx, domain.Agent{ID: "a2", ResourceGroup: "default", Address: "http://127.0.0.1:2",
		Architecture: "x86_64", Runtime: "process", Status: domain.AgentAlive, Schedulable: true, Capacity: capacity}, h.clock.now); err != nil {
		t.Fatal(err)
	}
	d := h.dep
	d.Replicas = 2
	if err := h.st.UpdateDeployment(h.ctx, d, []domain.DeploymentStatus{d.Status}); err != nil {
		t.Fatal(err)
	}
	routes := func() (healthyOn map[domain.AgentID]int, all []domain.Route) {
		t.Helper()
		rs, err := h.st.ListRoutes(h.ctx, store.RouteFilter{Deployments: []domain.DeploymentID{"d1"}})
		if err != nil {
			t.Fatal(err)
		}
		healthyOn = map[domain.AgentID]int{}
		for _, r := range rs {
			if r.Status != domain.RouteHealthy {
				continue
			}
			sk, err := h.st.GetSession(h.ctx, r.Session)
			if err != nil {
				t.Fatal(err)
			}
			healthyOn[sk.Kernels[0].Agent]++
		}
		return healthyOn, rs
	}
	for range 4 {
		h.step(time.Second)
	}
	if on, _ := routes(); on["a1"] != 2 {
		t.Fatalf("before the drain: HEALTHY routes by agent %v, want 2 on a1", on)
	}

	// a1 drains with a deadline far off; new sessions go to a2.
	if err := h.st.SetAgentSchedulable(h.ctx, "a1", false); err != nil {
		t.Fatal(err)
	}
	if err := h.st.DrainAgent(h.ctx, "a1", h.clock.now, h.clock.now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	h.sess.agent = "a2"
	for i := range 12 {
		h.step(time.Second)
		on, all := routes()
		if on["a1"]+on["a2"] < 2 {
			t.Fatalf("pass %d of the drain: HEALTHY routes by agent %v, fewer than the 2 replicas (routes %+v)", i, on, all)
		}
	}
	on, all := routes()
	if on["a2"] != 2 || on["a1"] != 0 {
		t.Fatalf("after the drain: HEALTHY routes by agent %v, want 2 on a2 and none on a1 (routes %+v)", on, all)
	}
	ended := 0
	for _, r := range all {
		if r.Status == domain.RouteTerminated && strings.Contains(r.StatusReason, "session ended") {
			ended++
		}
	}
	if d, _ := h.st.GetDeployment(h.ctx, "d1"); d.Status != domain.DeploymentReady || ended != 2 {
		t.Fatalf("deployment %s with %d of a1's routes ended, want READY and 2 (routes %+v)", d.Status, ended, all)
	}
}
