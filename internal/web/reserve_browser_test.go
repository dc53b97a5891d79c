package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestDashboardReservations: head-of-line reserve on one 8-cpu agent, as
// the API's reservation test sets it up. alice's "first" (4 cpu, 1h) runs;
// her "big" (8 cpu) reserves the agent from when first ends; her "long"
// and bob's "bobs" (2 cpu, 2h) fit now but would still run then, so they
// are held back. The queue page shows both sides of the reservation with
// what each means; long's session page links the session it yields to;
// bob sees that his session yields to "another session", never whose.
func TestDashboardReservations(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{Agents: 1})
	if code := d.Do(d.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"head_of_line": "reserve",
		"reservation_depth": 2}, nil); code != http.StatusOK {
		t.Fatalf("PUT group: %d", code)
	}
	alice := d.User("alice", "user", "p1")
	bob := d.User("bob", "user", "p1")
	submit := func(token, name, cpu, limit string) v1.Session {
		t.Helper()
		body := map[string]any{"name": name, "image": "sleep", "type": "batch", "resources": map[string]string{"cpu": cpu, "mem": "1g"}}
		if limit != "" {
			body["time_limit"] = limit
		}
		var s v1.Session
		if code := d.Do(token, "POST", "/v1/sessions", body, &s); code != http.StatusCreated {
			t.Fatalf("session %s: status %d", name, code)
		}
		return s
	}
	first := submit(alice, "first", "4", "1h")
	apitest.Eventually(t, 10*time.Second, "first running", func() bool {
		d.Do(alice, "GET", "/v1/sessions/"+first.ID, nil, &first)
		return first.Status == "RUNNING"
	})
	big := submit(alice, "big", "8", "")
	long := submit(alice, "long", "2", "2h")
	bobs := submit(bob, "bobs", "2", "2h")

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	blockerOf := func(id string) string {
		return fmt.Sprintf(`document.querySelector('#queue-rows tr[data-id=%q] .blocker[data-kind=reservation]')`, id)
	}
	b.go_(t, "#/queue", blockerOf(big.ID)+` !== null && `+blockerOf(long.ID)+` !== null`)
	bigText := eval[string](t, b, blockerOf(big.ID)+`.textContent`)
	if !strings.Contains(bigText, "reserved on agent-0 from") || !strings.Contains(bigText, "holds a reservation") {
		t.Errorf("big's reservation blocker reads %q; want where and from when, and that it holds the reservation", bigText)
	}
	longText := eval[string](t, b, blockerOf(long.ID)+`.textContent`)
	if !strings.Contains(longText, "reserved for session "+big.ID) || !strings.Contains(longText, "shorter time limit") {
		t.Errorf("long's reservation blocker reads %q; want the session it yields to and what would help", longText)
	}
	b.shot(t, "queue-reservations")

	b.go_(t, "#/sessions/"+long.ID, `document.querySelector('#why .blocker[data-kind=reservation] a') !== null`)
	if href := eval[string](t, b, `document.querySelector('#why .blocker[data-kind=reservation] a').getAttribute('href')`); href != "#/sessions/"+big.ID {
		t.Errorf("long's why links %q, want big's page", href)
	}
	b.shot(t, "session-held-back")

	b.click(t, "sign out", `header .who button`)
	b.login(t, d.URL, bob, "bob")
	b.go_(t, "#/sessions/"+bobs.ID, `document.querySelector('#why .blocker[data-kind=reservation]') !== null`)
	text := eval[string](t, b, `document.querySelector('#why .blocker[data-kind=reservation]').textContent`)
	if !strings.Contains(text, "another session") || strings.Contains(text, big.ID) || strings.Contains(text, big.ID[:8]) {
		t.Errorf("bob's reservation blocker reads %q; want \"another session\" and not alice's session", text)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#why .blocker[data-kind=reservation] a').length`); n != 0 {
		t.Errorf("bob's blocker links %d sessions, want none", n)
	}
}
