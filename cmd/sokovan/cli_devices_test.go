package main

import (
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// TestCLIAgentDevices: agent ls counts free devices, agent show lists each
// device with its holder, session why names the agent's devices, and half
// a whole device is refused with the field named.
func TestCLIAgentDevices(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1, AgentDevices: "cuda:2"})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	first := c.ok(alice, "session", "create", "--image", "sleep", "--slot", "cuda.device=2", "--wait", "--name", "first")
	if out := c.ok(alice, "session", "show", "first"); !strings.Contains(out, "DEVICES") || !strings.Contains(out, "cuda:0, cuda:1") {
		t.Errorf("session show lacks the kernel's devices:\n%s\n(create said %s)", out, first)
	}
	waiting := strings.Fields(c.ok(alice, "session", "create", "--image", "sleep", "--slot", "cuda.device=1"))[0]

	out := c.ok(m.AdminToken, "agent", "ls")
	header, rest, _ := strings.Cut(out, "\n")
	if !strings.Contains(header, "DEVICES") || !strings.Contains(rest, "0/2 free") {
		t.Errorf("agent ls:\n%s", out)
	}
	out = c.ok(m.AdminToken, "agent", "show", "agent-0")
	for _, want := range []string{"DEVICE", "HELD BY", "cuda:0", "cuda:1", "Fake GPU", "-k0"} {
		if !strings.Contains(out, want) {
			t.Errorf("agent show lacks %q:\n%s", want, out)
		}
	}
	apitest.Eventually(t, 20e9, "a round to skip the waiting session", func() bool {
		return strings.Contains(c.ok(alice, "session", "why", waiting), "agent-0 has 0 of 2 devices free")
	})
	r := c.run(alice, "session", "create", "--image", "sleep", "--slot", "cuda.device=0.5")
	if r.code == 0 || !strings.Contains(r.stderr, "resources.cuda.device") {
		t.Errorf("half a device: exit %d\nstderr: %s", r.code, r.stderr)
	}
}
