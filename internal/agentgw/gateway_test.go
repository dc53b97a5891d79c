package agentgw_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestRegisterRefusesImpersonatingALiveAgent: anyone with the shared agent
// token could register a live agent's id from another address, and the new
// epoch would end the sessions running there. A live agent keeps its
// address; a restart from the same address is the real agent and
// registers; once the agent is LOST, another address may take it over.
func TestRegisterRefusesImpersonatingALiveAgent(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	m.startAgent("x", sim.Config{})
	id := m.submit("sleep", nil)
	m.cycleUntil(id, domain.SessionRunning)
	before := m.agent("x")
	impostor := "http://203.0.113.7:8471"
	reg := agentrpc.Register{ID: "x", ResourceGroup: "default", Address: impostor, Architecture: "x86_64",
		Runtime: "sim", Capacity: map[string]string{"cpu": "4", "mem": "8g"}}

	code, msg := m.post("/v1/agent/register", reg)
	if code != http.StatusConflict {
		t.Fatalf("registering x from %s while it is alive: %d %q, want 409", impostor, code, msg)
	}
	for _, want := range []string{"agent x", "alive", before.Address, impostor} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	after := m.agent("x")
	if after.Epoch != before.Epoch || after.Address != before.Address || after.Status != domain.AgentAlive {
		t.Errorf("agent after the refused registration: epoch %d address %s %v, want epoch %d address %s ALIVE",
			after.Epoch, after.Address, after.Status, before.Epoch, before.Address)
	}
	if err := m.co.Cycle(m.ctx); err != nil {
		t.Fatal(err)
	}
	s := m.session(id)
	if s.Session.Status != domain.SessionRunning || s.Kernels[0].Status != domain.KernelRunning {
		t.Fatalf("session after the refused registration: %v, kernel %v, want RUNNING", s.Session.Status, s.Kernels[0].Status)
	}

	// The real agent restarting at its own address registers as before,
	// reporting the kernel it still runs.
	same := reg
	same.Address = before.Address
	same.Kernels = []agentrpc.KernelReport{{ID: s.Kernels[0].ID, Running: true}}
	if code, msg := m.post("/v1/agent/register", same); code != http.StatusOK {
		t.Fatalf("registering x again from its own address: %d %q, want 200", code, msg)
	}
	restarted := m.agent("x")
	if restarted.Epoch <= before.Epoch {
		t.Errorf("epoch after a restart = %d, want above %d", restarted.Epoch, before.Epoch)
	}
	if got := m.session(id).Session.Status; got != domain.SessionRunning {
		t.Errorf("session after the real agent re-registered: %v, want RUNNING", got)
	}

	// Silent past the heartbeat timeout, x is LOST, and another address
	// may take it over.
	m.clock.Advance(31 * time.Second)
	if err := m.co.Sweep(m.ctx); err != nil {
		t.Fatal(err)
	}
	if got := m.agent("x").Status; got != domain.AgentLost {
		t.Fatalf("x after 31 s of silence: %v, want LOST", got)
	}
	if code, msg := m.post("/v1/agent/register", reg); code != http.StatusOK {
		t.Fatalf("registering the lost x from %s: %d %q, want 200", impostor, code, msg)
	}
	taken := m.agent("x")
	if taken.Address != impostor || taken.Status != domain.AgentAlive || taken.Epoch <= restarted.Epoch {
		t.Errorf("x after the takeover: %s %v epoch %d, want %s ALIVE above epoch %d",
			taken.Address, taken.Status, taken.Epoch, impostor, restarted.Epoch)
	}
}

// TestInvalidSpecCancelsAtOnce: an agent that refuses a kernel's spec as
// invalid answers create_kernels with 400 invalid_spec, and the session is
// cancelled with the agent's reason after that one attempt, instead of
// being retried max_retries times in each of max_retries placements.
func TestInvalidSpecCancelsAtOnce(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	m.startAgent("x", sim.Config{})
	// The API refuses this name at submit; a session stored by a manager
	// of an earlier release, say, still reaches the agent with it.
	id := m.submit("sleep", map[string]string{"LD_PRELOAD": "/tmp/evil.so"})
	m.cycleUntil(id, domain.SessionCancelled)

	s := m.session(id)
	if !strings.Contains(s.Session.StatusReason, "LD_PRELOAD is reserved") {
		t.Errorf("reason %q does not carry the agent's refusal", s.Session.StatusReason)
	}
	if k := s.Kernels[0]; k.Status != domain.KernelCancelled {
		t.Errorf("kernel %s is %v, want CANCELLED", k.ID, k.Status)
	}
	var starts []string
	for _, e := range m.history(id) {
		if e.Result == domain.ResultNeedRetry || e.Result == domain.ResultExpired {
			t.Errorf("history has %s %s: %s", e.Cause, e.Result, e.Message)
		}
		if e.Cause == domain.HandlerStartSessions {
			starts = append(starts, fmt.Sprintf("%s %v→%v", e.Result, e.From, e.To))
		}
	}
	if want := []string{"GIVE_UP PREPARED→CANCELLED"}; !slices.Equal(starts, want) {
		t.Errorf("StartSessions history %v, want %v", starts, want)
	}
	if occ := m.agent("x").Occupied; !occ.IsZero() {
		t.Errorf("agent x still holds %v for the cancelled kernel", m.reg.FormatSlots(occ))
	}
}
