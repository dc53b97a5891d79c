package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func TestResourceGroups(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		var g v1.Group
		code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/gpu", map[string]any{"sequencer": "drf",
			"timeouts": map[string]string{"pending": "90s"}}, &g)
		if code != http.StatusCreated || g.Name != "gpu" || g.State != "ACTIVE" || g.Sequencer != "drf" ||
			g.Selector != "concentrated" || g.MaxRetries != 3 || g.Timeouts.Pending != "90s" || g.Timeouts.Creating != "600s" ||
			g.HeadOfLine != "reserve" || g.ReservationDepth != 4 {
			t.Fatalf("create group: %d %+v", code, g)
		}
		code = m.Do(m.AdminToken, "PUT", "/v1/resource-groups/gpu", map[string]any{"reservation_depth": 9}, &g)
		if code != http.StatusOK || g.HeadOfLine != "reserve" || g.ReservationDepth != 9 {
			t.Fatalf("set reservation depth: %d %+v", code, g)
		}
		// Fields left out keep their values.
		code = m.Do(m.AdminToken, "PUT", "/v1/resource-groups/gpu", map[string]any{"state": "DRAINING", "selector": "round-robin",
			"allowed_types": []string{"batch"}}, &g)
		if code != http.StatusOK || g.State != "DRAINING" || g.Sequencer != "drf" || g.Selector != "round-robin" ||
			g.Timeouts.Pending != "90s" || len(g.AllowedTypes) != 1 {
			t.Fatalf("change group: %d %+v", code, g)
		}
		var got v1.Group
		if code := m.Do(alice, "GET", "/v1/resource-groups/gpu", nil, &got); code != 200 || got.State != "DRAINING" {
			t.Errorf("get group: %d %+v", code, got)
		}
		var list struct{ Items []v1.Group }
		if m.Do(alice, "GET", "/v1/resource-groups", nil, &list); len(list.Items) != 2 {
			t.Errorf("list groups: %+v", list.Items)
		}
		if code, _ := m.Raw(alice, "GET", "/v1/resource-groups/nope", nil); code != 404 {
			t.Errorf("missing group: %d", code)
		}

		for _, tc := range []struct {
			name  string
			path  string
			body  any
			field string
		}{
			{"unknown sequencer", "/v1/resource-groups/gpu", map[string]any{"sequencer": "random"}, "sequencer"},
			{"unknown selector", "/v1/resource-groups/gpu", map[string]any{"selector": "best"}, "selector"},
			{"unknown state", "/v1/resource-groups/gpu", map[string]any{"state": "PAUSED"}, "state"},
			{"bad head of line", "/v1/resource-groups/gpu", map[string]any{"head_of_line": "maybe"}, "head_of_line"},
			{"negative reservation depth", "/v1/resource-groups/gpu", map[string]any{"reservation_depth": -1}, "reservation_depth"},
			{"reservation depth too deep", "/v1/resource-groups/gpu", map[string]any{"reservation_depth": 101}, "reservation_depth"},
			{"negative retries", "/v1/resource-groups/gpu", map[string]any{"max_retries": -1}, "max_retries"},
			{"bad duration", "/v1/resource-groups/gpu", map[string]any{"timeouts": map[string]string{"pending": "soon"}}, "timeouts.pending"},
			{"negative duration", "/v1/resource-groups/gpu", map[string]any{"timeouts": map[string]string{"creating": "-1s"}}, "timeouts.creating"},
			{"number duration", "/v1/resource-groups/gpu", map[string]any{"timeouts": map[string]any{"creating": 90}}, "timeouts.creating"},
			{"unknown timeout", "/v1/resource-groups/gpu", map[string]any{"timeouts": map[string]string{"running": "1s"}}, "timeouts.running"},
			{"unknown session type", "/v1/resource-groups/gpu", map[string]any{"allowed_types": []string{"cron"}}, "allowed_types[0]"},
			{"bad name", "/v1/resource-groups/a%20b", map[string]any{}, "name"},
		} {
			before := stored(t, m)
			var e v1.ErrorResponse
			if code := m.Do(m.AdminToken, "PUT", tc.path, tc.body, &e); code != 400 || e.Error.Field != tc.field {
				t.Errorf("%s: %d field %q, want 400 field %q (%s)", tc.name, code, e.Error.Field, tc.field, e.Error.Message)
			}
			var after v1.Group
			m.Do(m.AdminToken, "GET", "/v1/resource-groups/gpu", nil, &after)
			if after.Sequencer != "drf" || after.Selector != "round-robin" || after.State != "DRAINING" || stored(t, m) != before {
				t.Errorf("%s: a refused PUT changed the group to %+v", tc.name, after)
			}
		}
	})
}

func TestAgents(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Agents: 1})
		alice := m.User("alice", "user", "p1")
		s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "2", "mem": "4g"}})
		waitStatus(t, m, alice, s.ID, "RUNNING")
		var list struct{ Items []v1.Agent }
		m.Do(alice, "GET", "/v1/agents", nil, &list)
		if len(list.Items) != 1 {
			t.Fatalf("agents: %+v", list.Items)
		}
		a := list.Items[0]
		if a.ID != "agent-0" || a.Status != "ALIVE" || !a.Schedulable || a.ResourceGroup != "default" ||
			a.AvailableSlots["cpu"] != "8" || a.OccupiedSlots["cpu"] != "2" || a.FreeSlots["mem"] != "12g" ||
			a.KernelCount != 1 || a.LastHeartbeat == nil {
			t.Errorf("agent: %+v", a)
		}
		for _, tc := range []struct {
			verb string
			want bool
		}{{"cordon", false}, {"uncordon", true}, {"drain", false}} {
			var got v1.Agent
			if code := m.Do(m.AdminToken, "POST", "/v1/agents/agent-0/"+tc.verb, nil, &got); code != 200 || got.Schedulable != tc.want {
				t.Errorf("%s: %d schedulable %v", tc.verb, code, got.Schedulable)
			}
		}
		// A drained agent takes nothing new; what runs there runs on.
		waiting := create(t, m, alice, map[string]any{"image": "sleep"})
		apitest.Eventually(t, 20*time.Second, "a round to skip the session", func() bool {
			var hist v1.List[v1.History]
			m.Do(alice, "GET", "/v1/sessions/"+waiting.ID+"/history", nil, &hist)
			return len(hist.Items) > 0
		})
		if got := get(t, m, alice, waiting.ID); got.Status != "PENDING" {
			t.Errorf("session on a drained cluster is %s", got.Status)
		}
		if got := get(t, m, alice, s.ID); got.Status != "RUNNING" {
			t.Errorf("the drained agent's session is %s", got.Status)
		}
		m.Do(m.AdminToken, "POST", "/v1/agents/agent-0/uncordon", nil, nil)
		waitStatus(t, m, alice, waiting.ID, "RUNNING")
		if code, _ := m.Raw(m.AdminToken, "POST", "/v1/agents/agent-9/cordon", nil); code != 404 {
			t.Errorf("cordon a missing agent: %d", code)
		}
	})
}

// TestGroupDefaultAndMinimumSlots: a group's default_slots fill what a
// request leaves out and its min_slots refuse less; both are stored, shown
// in force (over the built-in cpu 1 / mem 1g and floor cpu 0.01 / mem 16m),
// and a default below the minimum is refused.
func TestGroupDefaultAndMinimumSlots(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		var g struct {
			DefaultSlots map[string]string `json:"default_slots"`
			MinSlots     map[string]string `json:"min_slots"`
		}
		m.Do(alice, "GET", "/v1/resource-groups/default", nil, &g)
		if g.DefaultSlots["cpu"] != "1" || g.DefaultSlots["mem"] != "1g" || g.MinSlots["cpu"] != "0.01" || g.MinSlots["mem"] != "16m" {
			t.Fatalf("built-in slots in force: %+v", g)
		}
		code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{
			"default_slots": map[string]string{"mem": "2g"}, "min_slots": map[string]string{"mem": "256m"}}, &g)
		if code != http.StatusOK || g.DefaultSlots["mem"] != "2g" || g.DefaultSlots["cpu"] != "1" || g.MinSlots["mem"] != "256m" {
			t.Fatalf("set slots: %d %+v", code, g)
		}
		s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]any{"cpu": "2"}})
		if s.RequestedSlots["cpu"] != "2" || s.RequestedSlots["mem"] != "2g" {
			t.Errorf("requested %v, want cpu 2 as asked and the group's mem 2g", s.RequestedSlots)
		}
		var e v1.ErrorResponse
		if code, raw := m.Raw(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep",
			"resources": map[string]any{"mem": "128m"}}); code != 400 || json.Unmarshal(raw, &e) != nil || e.Error.Field != "resources.mem" {
			t.Errorf("mem below the group's minimum: %d %s", code, raw)
		}
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{
			"default_slots": map[string]string{"mem": "64m"}}, &e); code != 400 || e.Error.Field != "default_slots.mem" {
			t.Errorf("default below the minimum: %d %+v", code, e)
		}
	})
}
