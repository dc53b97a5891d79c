package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// `agent drain --deadline 1s --wait` reports the kernels left, then
// "drained" once the deadline has ended the session on the agent.
func TestCLIAgentDrainDeadlineWait(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "1", "--mem", "1g", "--name", "long", "--wait")

	// The coordinator sweeps every 30 s; this test sweeps more often so
	// the deadline is acted on within the test's patience.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for ctx.Err() == nil {
			_ = m.Coordinator.Sweep(ctx)
			time.Sleep(50 * time.Millisecond)
		}
	}()

	if r := c.run(m.AdminToken, "agent", "drain", "agent-0", "--deadline", "soon"); r.code == 0 || !strings.Contains(r.stderr, "deadline") {
		t.Fatalf("bad deadline: exit %d, stderr %q; want a non-zero exit naming deadline", r.code, r.stderr)
	}
	var a v1.Agent
	if m.Do(m.AdminToken, "GET", "/v1/agents/agent-0", nil, &a); !a.Schedulable {
		t.Fatal("a refused drain made the agent unschedulable")
	}
	// A deadline a moment away, so --wait has progress to print first (0s
	// ends the kernel before the drain answers).
	out := c.ok(m.AdminToken, "agent", "drain", "agent-0", "--deadline", "1s", "--wait")
	if !strings.Contains(out, "agent agent-0 draining: 1 kernels remain") || !strings.HasSuffix(out, "agent agent-0 drained\n") {
		t.Fatalf("drain --wait printed:\n%s", out)
	}
	if out := c.ok(m.AdminToken, "agent", "ls"); !strings.Contains(out, "no (drained)") {
		t.Errorf("agent ls does not show the drain:\n%s", out)
	}
}
