package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// Seed 003's object states at the API: DRAINING refuses submits with 409
// naming the state yet schedules what it already holds; moves the table has
// no row for are refused with 409 and change nothing.
func TestGroupObjectStates(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		ctx := context.Background()
		held := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})

		var g v1.Group
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"state": "DRAINING"}, &g); code != 200 || g.State != "DRAINING" {
			t.Fatalf("remove (ACTIVE → DRAINING): %d %+v", code, g)
		}
		before := stored(t, m)
		var e v1.ErrorResponse
		code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}}, &e)
		if code != http.StatusConflict || e.Error.Field != "resource_group" || !strings.Contains(e.Error.Message, "DRAINING") {
			t.Fatalf("submit to a DRAINING group: %d %+v; want 409 naming DRAINING", code, e.Error)
		}
		for _, to := range []string{"ACTIVE", "STOPPED"} {
			e = v1.ErrorResponse{}
			if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"state": to, "max_retries": 7}, &e); code != http.StatusConflict || e.Error.Field != "state" {
				t.Errorf("DRAINING → %s: %d %+v; want 409 on state", to, code, e.Error)
			}
		}
		m.Do(alice, "GET", "/v1/resource-groups/default", nil, &g)
		if g.State != "DRAINING" || g.MaxRetries == 7 || stored(t, m) != before {
			t.Fatalf("refused requests changed something: %+v", g)
		}
		// Repeating Remove is legal and changes nothing.
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"state": "DRAINING"}, &g); code != 200 {
			t.Fatalf("repeated remove: %d", code)
		}
		if err := m.Coordinator.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		if s := get(t, m, alice, held.ID); s.Status == "PENDING" || s.Status == "CANCELLED" {
			t.Fatalf("the session a DRAINING group holds is %s; want it scheduled", s.Status)
		}
	})
}

// STOPPED accepts sessions but schedules none until Start.
func TestGroupStoppedHoldsUntilStarted(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	ctx := context.Background()
	if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"state": "STOPPED"}, nil); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
	if err := m.Coordinator.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	var why v1.Why
	m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/why", nil, &why)
	if got := get(t, m, alice, s.ID); got.Status != "PENDING" || len(why.Blockers) == 0 || why.Blockers[0].Kind != "resource_group_state" {
		t.Fatalf("in a STOPPED group: %s %+v; want PENDING blocked by resource_group_state", got.Status, why.Blockers)
	}
	if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"state": "ACTIVE"}, nil); code != 200 {
		t.Fatalf("start: %d", code)
	}
	if err := m.Coordinator.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := get(t, m, alice, s.ID); got.Status == "PENDING" {
		t.Fatal("still PENDING after Start")
	}
}

// Seed 003's DRAINING, start to end in one group: it holds running
// sessions and a queue when it is set DRAINING; new submits are refused
// with 409, but the queue is still placed and runs as room frees up; the
// group cannot be removed while anything in it lives, nor while an agent
// is still in it (a LOST one included, until it is removed), and is
// removed once it is empty.
func TestGroupDrainingFinishesQueueThenRemoved(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		ctx := context.Background()
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/batch", map[string]any{}, nil); code != http.StatusCreated {
			t.Fatalf("create batch: %d", code)
		}
		// Room for two one-cpu sessions at a time.
		m.RegisterAgent("b-0", "batch", map[string]string{"cpu": "2", "mem": "4g"})
		submit := func() v1.Session {
			t.Helper()
			return create(t, m, alice, map[string]any{"image": "sleep", "resource_group": "batch",
				"resources": map[string]string{"cpu": "1", "mem": "1g"}})
		}
		// settle runs cycles until cond holds: agent events arrive on their
		// own goroutine, so one cycle may not see them yet.
		settle := func(what string, cond func() bool) {
			t.Helper()
			apitest.Eventually(t, 10*time.Second, what, func() bool {
				if err := m.Coordinator.Cycle(ctx); err != nil {
					t.Fatal(err)
				}
				return cond()
			})
		}
		all := func(want string, ss ...v1.Session) func() bool {
			return func() bool {
				for _, s := range ss {
					if get(t, m, alice, s.ID).Status != want {
						return false
					}
				}
				return true
			}
		}
		end := func(ss ...v1.Session) {
			t.Helper()
			for _, s := range ss {
				if code := m.Do(alice, "DELETE", "/v1/sessions/"+s.ID, nil, nil); code != http.StatusAccepted {
					t.Fatalf("end %s: %d", s.ID, code)
				}
			}
		}
		removeRefused := func(when, text string) {
			t.Helper()
			var e v1.ErrorResponse
			if code := m.Do(m.AdminToken, "DELETE", "/v1/resource-groups/batch", nil, &e); code != http.StatusConflict ||
				!strings.Contains(e.Error.Message, text) {
				t.Fatalf("remove %s: %d %+v; want 409 naming %q", when, code, e.Error, text)
			}
		}

		r1, r2 := submit(), submit()
		settle("the first two RUNNING", all("RUNNING", r1, r2))
		q1, q2 := submit(), submit()
		if err := m.Coordinator.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		for _, q := range []v1.Session{q1, q2} {
			if s := get(t, m, alice, q.ID); s.Status != "PENDING" {
				t.Fatalf("queued session %s is %s with the agent full", q.ID, s.Status)
			}
		}

		var g v1.Group
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/batch", map[string]any{"state": "DRAINING"}, &g); code != http.StatusOK || g.State != "DRAINING" {
			t.Fatalf("ACTIVE → DRAINING: %d %+v", code, g)
		}
		var e v1.ErrorResponse
		if code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "resource_group": "batch"}, &e); code != http.StatusConflict ||
			e.Error.Field != "resource_group" || !strings.Contains(e.Error.Message, "DRAINING") {
			t.Fatalf("submit to a DRAINING group: %d %+v; want 409 naming DRAINING", code, e.Error)
		}
		removeRefused("with 4 live sessions", "4 live sessions")

		// The running two end; the queue takes their place.
		end(r1, r2)
		settle("the queued two RUNNING in a DRAINING group", all("RUNNING", q1, q2))
		if !all("TERMINATED", r1, r2)() {
			t.Fatal("the first two did not end")
		}
		removeRefused("with the queue running", "2 live sessions")

		end(q1, q2)
		settle("the queued two TERMINATED", all("TERMINATED", q1, q2))
		removeRefused("with its agent still in it", "1 ALIVE or LOST agents")
		// The agent moves to another group, as one restarted with
		// --resource-group default does.
		m.RegisterAgent("b-0", "default", map[string]string{"cpu": "2", "mem": "4g"})
		// An agent whose node died stays LOST and holds the group until
		// it is removed.
		m.RegisterAgent("b-1", "batch", map[string]string{"cpu": "2", "mem": "4g"})
		if err := m.Store.SetAgentStatus(ctx, "b-1", domain.AgentLost); err != nil {
			t.Fatal(err)
		}
		removeRefused("with a LOST agent in it", "1 ALIVE or LOST agents")
		var a v1.Agent
		if code := m.Do(m.AdminToken, "DELETE", "/v1/agents/b-1", nil, &a); code != http.StatusOK || a.Status != "TERMINATED" {
			t.Fatalf("remove the LOST agent: %d %+v", code, a)
		}
		if code := m.Do(m.AdminToken, "DELETE", "/v1/resource-groups/batch", nil, &g); code != http.StatusOK || g.State != "REMOVED" {
			t.Fatalf("remove the drained group: %d %+v", code, g)
		}
		if err := storetest.CheckInvariants(ctx, m.Store); err != nil {
			t.Fatal(err)
		}
	})
}
