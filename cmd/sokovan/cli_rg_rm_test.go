package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// Draining is seed 003's Remove, a one-way door: `rg set --state DRAINING`
// is refused and points at `rg rm`; rm says what it does and, without a
// terminal to ask on, does nothing without --yes; it drains a group that
// still holds something and removes it once empty; the default group is
// never drained; and a removed group's name can be created again.
func TestCLIRGRm(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p")
	state := func(group string) string {
		t.Helper()
		for _, line := range strings.Split(c.ok(m.AdminToken, "rg", "show", group), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "State:" {
				return f[1]
			}
		}
		t.Fatalf("rg show %s names no state", group)
		return ""
	}
	c.ok(m.AdminToken, "rg", "set", "old")
	m.RegisterAgent("old-0", "old", map[string]string{"cpu": "2", "mem": "4g"})
	id := strings.Fields(c.ok(alice, "session", "create", "--image", "sleep", "--group", "old", "--cpu", "1", "--mem", "1g"))[0]

	if r := c.run(m.AdminToken, "rg", "set", "old", "--state", "DRAINING"); r.code == 0 || !strings.Contains(r.stderr, "rg rm old") {
		t.Errorf("rg set --state DRAINING: exit %d, stderr %q; want a refusal pointing at rg rm", r.code, r.stderr)
	}
	r := c.run(m.AdminToken, "rg", "rm", "old")
	if r.code == 0 || !strings.Contains(r.stderr, "--yes") || !strings.Contains(r.stderr, "refuses new sessions") ||
		!strings.Contains(r.stderr, "1 live sessions") {
		t.Errorf("rm without --yes and without a terminal: exit %d, stderr %q; want what it would do and a refusal naming --yes", r.code, r.stderr)
	}
	if r := c.run(m.AdminToken, "rg", "rm", "default", "--yes"); r.code == 0 || !strings.Contains(r.stderr, "default group") {
		t.Errorf("rm default: exit %d, stderr %q; want a refusal", r.code, r.stderr)
	}
	for _, g := range []string{"old", "default"} {
		if st := state(g); st != "ACTIVE" {
			t.Fatalf("a refused command left group %s %s", g, st)
		}
	}

	// Not empty: drained, not removed; it takes no new session.
	if out := c.ok(m.AdminToken, "rg", "rm", "old", "--yes"); !strings.Contains(out, "DRAINING") || !strings.Contains(out, "again") {
		t.Errorf("rm of a group holding a session printed %q; want DRAINING and to run it again", out)
	}
	if st := state("old"); st != "DRAINING" {
		t.Fatalf("after rm the group is %s, want DRAINING", st)
	}
	if r := c.run(alice, "session", "create", "--image", "sleep", "--group", "old"); r.code == 0 || !strings.Contains(r.stderr, "DRAINING") {
		t.Errorf("create in a draining group: exit %d, stderr %q", r.code, r.stderr)
	}
	c.ok(alice, "session", "rm", id)
	apitest.Eventually(t, 20*time.Second, id+" ends", func() bool {
		return strings.Contains(c.ok(alice, "session", "show", id), "Status:     TERMINATED")
	})
	// Its agent moves to another group, as one restarted with
	// --resource-group default does.
	m.RegisterAgent("old-0", "default", map[string]string{"cpu": "2", "mem": "4g"})
	if out := c.ok(m.AdminToken, "rg", "rm", "old", "--yes"); out != "resource group old REMOVED\n" {
		t.Fatalf("rm of the emptied group printed %q", out)
	}
	if out := c.ok(m.AdminToken, "rg", "ls"); strings.Contains(out, "old") {
		t.Errorf("a removed group is listed:\n%s", out)
	}
	if r := c.run(m.AdminToken, "rg", "rm", "old", "--yes"); r.code == 0 {
		t.Errorf("rm twice exited 0")
	}

	// The name is free again: a new, ACTIVE group.
	c.ok(m.AdminToken, "rg", "set", "old")
	if st := state("old"); st != "ACTIVE" {
		t.Errorf("the group created again is %s, want ACTIVE", st)
	}
}
