package main

import (
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
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
