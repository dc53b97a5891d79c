package main

import (
	"context"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// `agent rm` retires a LOST agent, which `agent ls` then leaves out unless
// --all; on an ALIVE agent it exits non-zero with the manager's reason and
// changes nothing.
func TestCLIAgentRm(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 2, Manual: true})
	c := newCLI(t, m)
	if r := c.run(m.AdminToken, "agent", "rm", "agent-0"); r.code == 0 || !strings.Contains(r.stderr, "is ALIVE") {
		t.Fatalf("rm of an ALIVE agent: exit %d, stderr %q; want a non-zero exit naming ALIVE", r.code, r.stderr)
	}
	if out := c.ok(m.AdminToken, "agent", "ls"); !strings.Contains(out, "agent-0") {
		t.Fatalf("a refused rm hid the agent:\n%s", out)
	}
	if err := m.Store.SetAgentStatus(context.Background(), "agent-0", domain.AgentLost); err != nil {
		t.Fatal(err)
	}
	if out := c.ok(m.AdminToken, "agent", "rm", "agent-0"); out != "agent agent-0 TERMINATED\n" {
		t.Fatalf("rm printed %q", out)
	}
	if out := c.ok(m.AdminToken, "agent", "ls"); strings.Contains(out, "agent-0") || !strings.Contains(out, "agent-1") {
		t.Errorf("agent ls after rm:\n%s\nwant agent-1 without agent-0", out)
	}
	if out := c.ok(m.AdminToken, "agent", "ls", "--all"); !strings.Contains(out, "TERMINATED") {
		t.Errorf("agent ls --all does not show the removed agent:\n%s", out)
	}
	if r := c.run(m.AdminToken, "agent", "rm", "agent-0"); r.code == 0 || !strings.Contains(r.stderr, "already TERMINATED") {
		t.Errorf("rm twice: exit %d, stderr %q; want a non-zero exit", r.code, r.stderr)
	}
}
