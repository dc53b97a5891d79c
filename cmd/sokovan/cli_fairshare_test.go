package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// TestCLIFairShareAndUsage: rg set turns on fairshare with a half-life and
// shares, rg show prints them, a bad share exits non-zero sending nothing;
// queue shows the factor; usage --since reports slot-hours as a table and
// as CSV.
func TestCLIFairShareAndUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := apitest.New(t, apitest.Options{Manual: true, Agents: 1})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	out := c.ok(m.AdminToken, "rg", "set", "default", "--sequencer", "fairshare", "--half-life", "24h",
		"--share", "user:alice=2", "--share", "project:p1=3")
	if !strings.Contains(out, "Fair share:    half-life 86400s; shares project:p1=3, user:alice=2 (others 1)") {
		t.Errorf("rg set --share:\n%s", out)
	}
	if r := c.run(m.AdminToken, "rg", "set", "default", "--share", "alice=2"); r.code == 0 || !strings.Contains(r.stderr, "user:NAME=N") {
		t.Errorf("bad share: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := c.run(m.AdminToken, "rg", "set", "default", "--half-life", "1s"); r.code == 0 || !strings.Contains(r.stderr, "(field: fair_share.half_life)") {
		t.Errorf("bad half-life: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := m.Store.RollupUsage(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "8")
	if err := m.Coordinator.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Store.RollupUsage(ctx, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "8")
	// alice alone: U 1 of cpu, S 1 → 2^-1.
	if out := c.ok(alice, "queue"); !strings.Contains(out, "FAIR SHARE") || !strings.Contains(out, "0.500 (U 1.00 / S 1.00)") {
		t.Errorf("queue:\n%s", out)
	}
	out = c.ok(m.AdminToken, "usage", "--since", "1d", "--slot", "cpu", "-o", "csv")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != "at,user,slot,hours" || !strings.Contains(lines[1], ",alice,cpu,16.0") {
		t.Errorf("usage -o csv:\n%s", out)
	}
	if out := c.ok(alice, "usage", "--by", "project"); !strings.Contains(out, "p1") || !strings.Contains(out, "SLOT-HOURS") {
		t.Errorf("usage --by project:\n%s", out)
	}
	if r := c.run(alice, "usage", "--by", "host"); r.code == 0 || !strings.Contains(r.stderr, "(field: by)") {
		t.Errorf("usage --by host: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := c.run(alice, "usage", "-o", "csv"); r.code == 0 {
		t.Errorf("usage -o csv without accounting flags: exit 0")
	}
}
