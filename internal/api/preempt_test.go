package api_test

import (
	"net/http"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestPreemptionSettings: a group's preemption policy is off by default,
// set field by field, and refused with 400 naming the field on a bad
// value, changing nothing; a session is preemptible by default when
// batch, not otherwise, and may opt out or in and ask to be requeued.
func TestPreemptionSettings(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		var g v1.Group
		m.Do(m.AdminToken, "GET", "/v1/resource-groups/default", nil, &g)
		if g.Preemption != (v1.Preemption{MinRuntime: "0s", Window: "0s"}) {
			t.Errorf("default preemption %+v, want off", g.Preemption)
		}
		for _, tc := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"bad duration", map[string]any{"enabled": true, "min_runtime": "soon"}, "preemption.min_runtime"},
			{"negative window", map[string]any{"window": "-1h"}, "preemption.window"},
			{"negative budget", map[string]any{"budget": -1, "window": "1h"}, "preemption.budget"},
			{"budget without window", map[string]any{"budget": 3}, "preemption.window"},
			{"window past the records kept", map[string]any{"window": "169h"}, "preemption.window"},
		} {
			code, raw := m.Raw(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"preemption": tc.body})
			if e := errorOf(t, raw); code != http.StatusBadRequest || e.Field != tc.field {
				t.Errorf("%s: %d %+v, want 400 naming %s", tc.name, code, e, tc.field)
			}
		}
		m.Do(m.AdminToken, "GET", "/v1/resource-groups/default", nil, &g)
		if g.Preemption.Enabled {
			t.Error("a refused request turned preemption on")
		}
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"preemption": map[string]any{
			"enabled": true, "min_runtime": "10m", "budget": 5, "window": "1h"}}, &g); code != http.StatusOK {
			t.Fatalf("PUT group: %d", code)
		}
		if want := (v1.Preemption{Enabled: true, MinRuntime: "600s", Budget: 5, Window: "3600s"}); g.Preemption != want {
			t.Errorf("preemption %+v, want %+v", g.Preemption, want)
		}
		// A later change keeps the fields it does not name.
		m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"preemption": map[string]any{"budget": 2}}, &g)
		if g.Preemption.MinRuntime != "600s" || g.Preemption.Budget != 2 || !g.Preemption.Enabled {
			t.Errorf("partial change: %+v", g.Preemption)
		}

		f, tr := false, true
		for _, tc := range []struct {
			name, typ   string
			preemptible *bool
			requeue     bool
			want        bool
		}{
			{"batch by default", "batch", nil, false, true},
			{"batch opts out", "batch", &f, false, false},
			{"interactive by default", "interactive", nil, false, false},
			{"interactive opts in", "interactive", &tr, true, true},
		} {
			body := map[string]any{"image": "sleep", "type": tc.typ, "resources": map[string]string{"cpu": "1"},
				"requeue": tc.requeue}
			if tc.preemptible != nil {
				body["preemptible"] = *tc.preemptible
			}
			s := get(t, m, alice, create(t, m, alice, body).ID)
			if s.Preemptible != tc.want || s.Requeue != tc.requeue {
				t.Errorf("%s: preemptible %v requeue %v, want %v %v", tc.name, s.Preemptible, s.Requeue, tc.want, tc.requeue)
			}
		}
		// A job's members are never victims: their gang would break.
		for _, name := range []string{"spark", "other"} {
			if code := m.Do(alice, "POST", "/v1/jobs", map[string]any{"name": name, "min_available": 2}, nil); code != http.StatusCreated {
				t.Fatalf("create job %s: %d", name, code)
			}
		}
		member := create(t, m, alice, map[string]any{"image": "sleep", "type": "batch", "job": "spark",
			"resources": map[string]string{"cpu": "1"}})
		if get(t, m, alice, member.ID).Preemptible {
			t.Error("a job member is preemptible")
		}
		code, raw := m.Raw(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "job": "other",
			"preemptible": true, "resources": map[string]string{"cpu": "1"}})
		if e := errorOf(t, raw); code != http.StatusBadRequest || e.Field != "preemptible" {
			t.Errorf("preemptible job member: %d %+v, want 400 naming preemptible", code, e)
		}
	})
}
