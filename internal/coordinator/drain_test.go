package coordinator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// A drain with a deadline places nothing new on the agent, lets what runs
// there go on until the deadline, then terminates what remains with a
// reason naming the drain; the agent ends empty and the invariants hold.
func TestDrainDeadlineEmptiesAgent(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		a := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(a, domain.SessionRunning)
		agent := h.session(a).Kernels[0].Agent
		other := domain.AgentID("agent-0")
		if agent == other {
			other = "agent-1"
		}
		if err := h.st.DrainAgent(h.ctx, agent, h.clock.Now(), h.clock.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		// Nothing new lands on the draining agent, even with room there.
		b := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(b, domain.SessionRunning)
		if got := h.session(b).Kernels[0].Agent; got != other {
			t.Fatalf("placed on %s while %s drains; want %s", got, agent, other)
		}

		h.advance(59 * time.Minute)
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.step()
		h.wantStatus(a, domain.SessionRunning)

		h.advance(time.Minute)
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		if got := h.session(a).Session.StatusReason; !strings.Contains(got, "drained") || !strings.Contains(got, string(agent)) {
			t.Errorf("reason %q; want it to name the drain of %s", got, agent)
		}
		h.until(a, domain.SessionTerminated)
		h.wantStatus(b, domain.SessionRunning)
		got, err := h.st.GetAgent(h.ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		if got.KernelCount != 0 || !got.Occupied.IsZero() || got.Schedulable {
			t.Fatalf("drained agent: %d kernels, occupied %v, schedulable %v; want empty and unschedulable",
				got.KernelCount, got.Occupied, got.Schedulable)
		}
		h.check()
	})
}

// Without a deadline a drain never ends sessions: it is a cordon that
// reports progress.
func TestDrainWithoutDeadlineWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "sqlite", 1, nil)
	a := h.submit("sleep", "1", 1, domain.SingleNode)
	h.until(a, domain.SessionRunning)
	if err := h.st.DrainAgent(h.ctx, "agent-0", h.clock.Now(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	h.advance(1000 * time.Hour)
	if err := h.c.Sweep(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.wantStatus(a, domain.SessionRunning)
}

// TestDrainDeadlineOnHungAgentDoesNotHoldTheLoop: the forced ends of a
// drain whose agent hangs run beside the sweep, not in it: the sessions
// are TERMINATING at once with the drain's reason, and the sweep returns
// without waiting out the agent's call timeout (an hour here).
func TestDrainDeadlineOnHungAgentDoesNotHoldTheLoop(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		a := h.submitWith(on("agent-0"), "sleep", "1", 1, domain.SingleNode)
		h.until(a, domain.SessionRunning)
		h.c.Configure(coordinator.Config{CallTimeout: time.Hour}, coordinator.GroupDefaults{})
		h.async = true
		h.agents.hang["agent-0"] = true
		if err := h.st.DrainAgent(h.ctx, "agent-0", h.clock.Now(), h.clock.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		h.advance(time.Minute)
		within(t, 30*time.Second, "a sweep past the deadline of a hung agent's drain", func() {
			if err := h.c.Sweep(h.ctx); err != nil {
				t.Fatal(err)
			}
		})
		s := h.session(a).Session
		if s.Status != domain.SessionTerminating || !strings.Contains(s.StatusReason, "drained") {
			t.Fatalf("session %s (%q), want TERMINATING with the drain's reason", s.Status, s.StatusReason)
		}
	})
}
