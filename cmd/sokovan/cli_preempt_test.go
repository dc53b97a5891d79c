package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestCLIPreemption: rg set turns preemption on with its guards and rg
// show prints them; a bad value exits non-zero naming the field; session
// create --no-preempt and --requeue reach the session.
func TestCLIPreemption(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	if out := c.ok(alice, "rg", "show", "default"); !strings.Contains(out, "Preemption:    off") {
		t.Errorf("rg show:\n%s", out)
	}
	out := c.ok(m.AdminToken, "rg", "set", "default", "--preemption", "--preempt-min-runtime", "10m",
		"--preempt-budget", "4", "--preempt-window", "1h")
	if !strings.Contains(out, "Preemption:    on; min runtime 600s, budget 4 per 3600s, window 3600s") {
		t.Errorf("rg set --preemption:\n%s", out)
	}
	if r := c.run(m.AdminToken, "rg", "set", "default", "--preempt-window", "soon"); r.code == 0 ||
		!strings.Contains(r.stderr, "(field: preemption.window)") {
		t.Errorf("bad window: exit %d, stderr %q", r.code, r.stderr)
	}
	out = c.ok(alice, "session", "create", "--image", "sleep", "--type", "batch", "--no-preempt", "--requeue", "-o", "json")
	if !strings.Contains(out, `"preemptible": false`) || !strings.Contains(out, `"requeue": true`) {
		t.Errorf("session create --no-preempt --requeue:\n%s", out)
	}
}

// TestCLIRequeuedAttemptHasItsOwnID: a preempted session's new attempt
// has an id of its own, so the short prefix ls shows still names the
// first attempt alone; show and history say which attempt it came from.
func TestCLIRequeuedAttemptHasItsOwnID(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1, Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	c.ok(m.AdminToken, "rg", "set", "default", "--preemption", "--preempt-min-runtime", "0s")
	submit := func(body map[string]any) v1.Session {
		t.Helper()
		body["image"], body["type"], body["resources"] = "sleep", "batch", map[string]string{"cpu": "8", "mem": "1g"}
		var s v1.Session
		if code := m.Do(alice, "POST", "/v1/sessions", body, &s); code != http.StatusCreated {
			t.Fatalf("create: %d", code)
		}
		return s
	}
	cycleUntil := func(id, want string) {
		t.Helper()
		apitest.Eventually(t, 20*time.Second, "session "+id+" to be "+want, func() bool {
			if err := m.Coordinator.Cycle(context.Background()); err != nil {
				t.Fatal(err)
			}
			var s v1.Session
			m.Do(alice, "GET", "/v1/sessions/"+id, nil, &s)
			return s.Status == want
		})
	}
	lo := submit(map[string]any{"requeue": true})
	cycleUntil(lo.ID, "RUNNING")
	hi := submit(map[string]any{"priority": 50})
	cycleUntil(hi.ID, "RUNNING")

	// The prefix ls shows (6 characters) names lo alone.
	if r := c.run(alice, "session", "show", lo.ID[:6]); r.code != 0 || !strings.Contains(r.stdout, "ID:         "+lo.ID+"\n") {
		t.Errorf("show %s (lo's prefix): exit %d\n%s%s", lo.ID[:6], r.code, r.stdout, r.stderr)
	}
	var all v1.List[v1.Session]
	m.Do(alice, "GET", "/v1/sessions", nil, &all)
	var again v1.Session
	for _, s := range all.Items {
		if s.RequeuedFrom == lo.ID {
			again = s
		}
	}
	if again.ID == "" || strings.HasPrefix(again.ID, lo.ID[:6]) {
		t.Fatalf("lo %s requeued as %q, want an id of its own", lo.ID, again.ID)
	}
	if out := c.ok(alice, "session", "show", again.ID[:6]); !strings.Contains(out, "Requeued:   from "+lo.ID+"\n") {
		t.Errorf("show of the new attempt:\n%s", out)
	}
	if out := c.ok(alice, "session", "history", lo.ID); !strings.Contains(out, "requeued as "+again.ID) {
		t.Errorf("history of lo:\n%s", out)
	}
	if out := c.ok(alice, "session", "history", again.ID); !strings.Contains(out, "new attempt of "+lo.ID) {
		t.Errorf("history of the new attempt:\n%s", out)
	}
}
