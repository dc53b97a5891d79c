package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestReservationWhyAndMetrics drives head-of-line reserve through the
// real coordinator and store. One 8-cpu agent runs "first" (4 cpu, 1h
// limit). "big" (8 cpu) cannot start until first ends: it reserves the
// agent from first's start + 1h. "long" and bob's (2 cpu, 2h) fit the 4
// free cpu but would still run then, so they wait; "short" (2 cpu, 10m)
// ends well before and is backfilled. why shows each side of the reservation, naming another
// user's session to nobody but its owner, and the metrics count it.
func TestReservationWhyAndMetrics(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Agents: 1})
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"head_of_line": "reserve",
			"reservation_depth": 2}, nil); code != http.StatusOK {
			t.Fatalf("PUT group: %d", code)
		}
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p1")
		submit := func(token, cpu, limit string) v1.Session {
			body := map[string]any{"image": "sleep", "type": "batch", "resources": map[string]string{"cpu": cpu}}
			if limit != "" {
				body["time_limit"] = limit
			}
			return create(t, m, token, body)
		}
		first := submit(alice, "4", "1h")
		waitStatus(t, m, alice, first.ID, "RUNNING")
		big := submit(alice, "8", "")
		long := submit(alice, "2", "2h")
		bobs := submit(bob, "2", "2h")
		short := submit(alice, "2", "10m")
		waitStatus(t, m, alice, short.ID, "RUNNING")

		why := func(token, id string) []v1.Blocker {
			t.Helper()
			var w v1.Why
			if code := m.Do(token, "GET", "/v1/sessions/"+id+"/why", nil, &w); code != http.StatusOK {
				t.Fatalf("why %s: %d", id, code)
			}
			return w.Blockers
		}
		find := func(bs []v1.Blocker) *v1.Blocker {
			for i := range bs {
				if bs[i].Kind == "reservation" {
					return &bs[i]
				}
			}
			return nil
		}
		if b := find(why(alice, big.ID)); b == nil || b.Scope != "agent-0" ||
			!strings.HasPrefix(b.Message, "reserved on agent-0 from ") {
			t.Errorf("big's reservation blocker: %+v", b)
		}
		if b := find(why(alice, long.ID)); b == nil || b.Scope != "session:"+big.ID ||
			!strings.Contains(b.Message, "reserved for session "+big.ID) {
			t.Errorf("long's blocker: %+v in %+v", b, why(alice, long.ID))
		}
		if b := find(why(bob, bobs.ID)); b == nil || b.Scope != "another session" ||
			strings.Contains(b.Message, big.ID) || !strings.Contains(b.Message, "reserved for another session") {
			t.Errorf("bob's blocker names alice's session: %+v", b)
		}
		for _, id := range []string{big.ID, long.ID} {
			if got := get(t, m, alice, id).Status; got != "PENDING" {
				t.Errorf("%s is %s, want PENDING", id, got)
			}
		}

		_, body := m.Raw("", "GET", "/metrics", nil)
		text := string(body)
		if !strings.Contains(text, `sokovan_reservations{resource_group="default"} 1`+"\n") {
			t.Errorf("/metrics lacks one reservation held")
		}
		if !strings.Contains(text, `sokovan_backfilled_placements_total{resource_group="default"} 1`+"\n") {
			t.Errorf("/metrics lacks the one backfilled placement")
		}
	})
}
