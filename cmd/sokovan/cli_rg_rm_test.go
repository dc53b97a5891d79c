package main

import (
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// `rg rm` removes a drained group; on a group that is not drained it
// exits non-zero naming why and changes nothing.
func TestCLIRGRm(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1})
	c := newCLI(t, m)
	c.ok(m.AdminToken, "rg", "set", "old")
	if r := c.run(m.AdminToken, "rg", "rm", "old"); r.code == 0 || !strings.Contains(r.stderr, "only a DRAINING group") {
		t.Fatalf("rm of an ACTIVE group: exit %d, stderr %q; want a non-zero exit naming DRAINING", r.code, r.stderr)
	}
	if out := c.ok(m.AdminToken, "rg", "ls"); !strings.Contains(out, "old") {
		t.Fatalf("a refused rm removed the group:\n%s", out)
	}
	c.ok(m.AdminToken, "rg", "set", "old", "--state", "DRAINING")
	if out := c.ok(m.AdminToken, "rg", "rm", "old"); out != "resource group old REMOVED\n" {
		t.Fatalf("rm printed %q", out)
	}
	if out := c.ok(m.AdminToken, "rg", "ls"); strings.Contains(out, "old") {
		t.Errorf("a removed group is listed:\n%s", out)
	}
	if r := c.run(m.AdminToken, "rg", "rm", "old"); r.code == 0 {
		t.Errorf("rm twice exited 0")
	}
}
