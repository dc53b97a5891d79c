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
)

// DELETE /v1/agents/{id} retires only a LOST agent that holds no kernel,
// refusing with 409 saying why otherwise; the retired agent answers as
// GET shows it, TERMINATED, and is left out of the list unless all=true.
func TestRetireAgent(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Agents: 1, Manual: true})
		alice := m.User("alice", "user", "p1")
		ctx := context.Background()
		cycleUntil := func(id, want string) {
			t.Helper()
			apitest.Eventually(t, 20*time.Second, "session "+id+" to be "+want, func() bool {
				if err := m.Coordinator.Cycle(ctx); err != nil {
					t.Fatal(err)
				}
				return get(t, m, alice, id).Status == want
			})
		}
		refused := func(what, token, id string, code int, text string) {
			t.Helper()
			var e v1.ErrorResponse
			if got := m.Do(token, "DELETE", "/v1/agents/"+id, nil, &e); got != code || !strings.Contains(e.Error.Message, text) {
				t.Fatalf("%s: %d %+v; want %d naming %q", what, got, e.Error, code, text)
			}
		}
		s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
		cycleUntil(s.ID, "RUNNING")

		refused("by a user", alice, "agent-0", http.StatusForbidden, "admin")
		refused("no such agent", m.AdminToken, "nope", http.StatusNotFound, "nope")
		refused("ALIVE", m.AdminToken, "agent-0", http.StatusConflict, "ALIVE")
		if err := m.Store.SetAgentStatus(ctx, "agent-0", domain.AgentLost); err != nil {
			t.Fatal(err)
		}
		refused("LOST with a running kernel", m.AdminToken, "agent-0", http.StatusConflict, "1 kernels")
		if code := m.Do(alice, "DELETE", "/v1/sessions/"+s.ID, nil, nil); code != http.StatusAccepted {
			t.Fatalf("end %s: %d", s.ID, code)
		}
		cycleUntil(s.ID, "TERMINATED")

		var a, seen v1.Agent
		if code := m.Do(m.AdminToken, "DELETE", "/v1/agents/agent-0", nil, &a); code != http.StatusOK || a.ID != "agent-0" || a.Status != "TERMINATED" {
			t.Fatalf("retire: %d %+v; want 200 TERMINATED", code, a)
		}
		if m.Do(m.AdminToken, "GET", "/v1/agents/agent-0", nil, &seen); seen.Status != "TERMINATED" || seen.Address != a.Address {
			t.Errorf("GET after retire %+v; want it as DELETE answered %+v", seen, a)
		}
		refused("TERMINATED", m.AdminToken, "agent-0", http.StatusConflict, "already TERMINATED")

		ids := func(query string) []string {
			t.Helper()
			var list v1.List[v1.Agent]
			if code := m.Do(alice, "GET", "/v1/agents"+query, nil, &list); code != http.StatusOK {
				t.Fatalf("list %q: %d", query, code)
			}
			var out []string
			for _, a := range list.Items {
				out = append(out, a.ID)
			}
			return out
		}
		m.RegisterAgent("agent-1", "default", map[string]string{"cpu": "2"})
		if got := ids(""); len(got) != 1 || got[0] != "agent-1" {
			t.Errorf("default list %v; want [agent-1], without the retired agent", got)
		}
		if got := ids("?all=true"); len(got) != 2 {
			t.Errorf("list with all %v; want both agents", got)
		}
		var e v1.ErrorResponse
		if code := m.Do(alice, "GET", "/v1/agents?all=maybe", nil, &e); code != http.StatusBadRequest || e.Error.Field != "all" {
			t.Errorf("all=maybe: %d %+v; want 400 on all", code, e.Error)
		}
	})
}
