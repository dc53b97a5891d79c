package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
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
