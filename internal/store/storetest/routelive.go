package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testRouteFollowsSession: while sessions serving HEALTHY routes end (one
// by one, some to TERMINATING, some straight to TERMINATED after their
// kernel exited) on one
// store instance, readers on another never see a HEALTHY route whose
// session is not RUNNING, and health moves racing the ends never make a
// route HEALTHY again. At the end every route is TERMINATING.
func testRouteFollowsSession(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "64"})
	f.must(f.s.CreateDeployment(f.ctx, deployment("d1", "llm", "alice", 1)), "create d1")
	const n = 16
	routes := make([]domain.Route, n)
	for i := range n {
		sid := domain.SessionID(fmt.Sprintf("s%02d", i))
		s := f.session(string(sid), "g", "alice", 1, []string{"cpu", "1"}, func(s *domain.Session) { s.Type = domain.TypeInference })
		f.schedule("g", s, "a1")
		f.advance(sid, domain.SessionRunning)
		r := domain.Route{ID: domain.RouteID(fmt.Sprintf("r%02d", i)), Deployment: "d1", Session: sid,
			Status: domain.RouteProvisioning, StatusChangedAt: at(2), CreatedAt: at(2)}
		f.must(f.s.CreateRoute(f.ctx, r), "create route")
		r.Status, r.StatusChangedAt, r.Endpoint = domain.RouteHealthy, at(3), "127.0.0.1:9000"
		f.must(f.s.UpdateRoute(f.ctx, r, []domain.RouteStatus{domain.RouteProvisioning}), "route healthy")
		routes[i] = r
	}
	other := f.open(Options{Registry: f.reg})
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, bad atomic.Int64
	wg.Go(func() {
		for !stop.Load() {
			rs, err := other.ListRoutes(f.ctx, store.RouteFilter{Statuses: []domain.RouteStatus{domain.RouteHealthy}})
			if err != nil {
				t.Errorf("list: %v", err)
				return
			}
			reads.Add(1)
			for _, r := range rs {
				if r.SessionStatus != domain.SessionRunning {
					bad.Add(1)
					t.Errorf("read a HEALTHY route %s whose session is %s", r.ID, r.SessionStatus)
				}
			}
		}
	})
	// A health checker keeps re-asserting HEALTHY, as a controller pass
	// that read the session RUNNING a moment ago would.
	wg.Go(func() {
		for !stop.Load() {
			for _, r := range routes {
				_ = other.UpdateRoute(f.ctx, r, []domain.RouteStatus{domain.RouteHealthy})
			}
		}
	})
	for i, r := range routes {
		if i%2 == 0 {
			_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{r.Session}, []domain.SessionStatus{domain.SessionRunning},
				domain.Transition{Session: domain.SessionTerminating, Kernel: domain.KernelTerminating}, "user", at(10+i))
			f.must(err, "terminate %s", r.Session)
			continue
		}
		// Its kernel exited; the session ends straight from RUNNING, as
		// the coordinator ends it.
		sk := f.get(r.Session)
		zero := 0
		f.kernel(sk.Kernels[0].ID, domain.KernelRunning, domain.KernelTerminated,
			func(u *store.KernelUpdate) { u.ExitCode = &zero })
		_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{r.Session}, []domain.SessionStatus{domain.SessionRunning},
			domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}, "exited", at(10+i))
		f.must(err, "end %s", r.Session)
	}
	stop.Store(true)
	wg.Wait()
	rs, err := f.s.ListRoutes(f.ctx, store.RouteFilter{Deployments: []domain.DeploymentID{"d1"}})
	f.must(err, "list")
	for _, r := range rs {
		if r.Status != domain.RouteTerminating {
			t.Errorf("route %s is %s (session %s), want TERMINATING", r.ID, r.Status, r.SessionStatus)
		}
	}
	if reads.Load() == 0 {
		t.Errorf("the reader never read")
	}
	f.invariant()
}
