package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

func TestUtilisation(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		ctx := t.Context()
		t0 := time.Date(2025, 1, 16, 9, 30, 0, 0, time.UTC)
		// Two agents of cpu 8 and mem 16g; after 30s one is lost.
		for i := range 6 {
			if i == 3 {
				if err := m.Store.SetAgentStatus(ctx, "agent-1", domain.AgentLost); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Store.RecordUtilisation(ctx, t0.Add(time.Duration(i)*10*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		q := func(from, to time.Time, step string) string {
			v := url.Values{"from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}
			if step != "" {
				v.Set("step", step)
			}
			return "/v1/resource-groups/default/utilisation?" + v.Encode()
		}

		var u v1.Utilisation
		if code := m.Do(alice, "GET", q(t0, t0.Add(time.Minute), "30s"), nil, &u); code != http.StatusOK {
			t.Fatalf("utilisation: status %d", code)
		}
		// 30s steps: 16 cores and 32 GiB for three samples, then 8 and 16.
		want := "cpu[16@0s 8@30s] mem[34359738368@0s 17179869184@30s]"
		if got := describe(u, t0); got != want || u.Step != "30s" {
			t.Errorf("series %s step %s, want %s step 30s", got, u.Step, want)
		}

		// An admin reads it too; with no step, 10s is the floor.
		if code := m.Do(m.AdminToken, "GET", q(t0, t0.Add(time.Minute), ""), nil, &u); code != http.StatusOK || u.Step != "10s" {
			t.Fatalf("admin, default step: status %d, step %s", code, u.Step)
		}
		if got := len(u.Series[0].Points); got != 6 {
			t.Errorf("10s steps over a minute: %d points, want 6", got)
		}
		// A week by default gets a step that gives at most 360 points.
		if code := m.Do(alice, "GET", q(t0.Add(-7*24*time.Hour), t0, ""), nil, &u); code != http.StatusOK || u.Step != "28m1s" {
			t.Errorf("a week, default step: status %d, step %s", code, u.Step)
		}
		// A range without samples has no series.
		if code := m.Do(alice, "GET", q(t0.Add(-time.Hour), t0, ""), nil, &u); code != http.StatusOK || len(u.Series) != 0 {
			t.Errorf("an hour before: status %d, %+v", code, u.Series)
		}

		for _, tc := range []struct {
			name, path, field string
		}{
			{"bad from", "/v1/resource-groups/default/utilisation?from=yesterday", "from"},
			{"bad to", "/v1/resource-groups/default/utilisation?to=1700000000", "to"},
			{"from after to", q(t0, t0.Add(-time.Minute), ""), "from"},
			{"bad step", q(t0, t0.Add(time.Minute), "often"), "step"},
			{"step under a second", q(t0, t0.Add(time.Minute), "500ms"), "step"},
			// A week at 10s is 60,480 points.
			{"too many points", q(t0.Add(-7*24*time.Hour), t0, "10s"), "step"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var r v1.ErrorResponse
				if code := m.Do(alice, "GET", tc.path, nil, &r); code != http.StatusBadRequest || r.Error.Field != tc.field {
					e := r.Error
					t.Errorf("status %d field %q (%s), want 400 field %q", code, e.Field, e.Message, tc.field)
				}
			})
		}
		if code, _ := m.Raw(alice, "GET", "/v1/resource-groups/nope/utilisation", nil); code != http.StatusNotFound {
			t.Errorf("unknown group: status %d, want 404", code)
		}
		if code, _ := m.Raw("", "GET", q(t0, t0.Add(time.Minute), ""), nil); code != http.StatusUnauthorized {
			t.Errorf("no token: status %d, want 401", code)
		}
	})
}

// describe writes each series as slot[capacity@offset …], checking that
// every point is empty of occupancy.
func describe(u v1.Utilisation, t0 time.Time) string {
	s := ""
	for i, se := range u.Series {
		if i > 0 {
			s += " "
		}
		s += se.Slot + "["
		for j, p := range se.Points {
			if j > 0 {
				s += " "
			}
			s += fmt.Sprintf("%.0f@%s", p.Capacity, p.At.Sub(t0))
			if p.Occupied != 0 || p.Used != 0 {
				s += "!occupied"
			}
		}
		s += "]"
	}
	return s
}
