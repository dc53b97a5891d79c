package coordinator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
)

// on designates a session to one agent.
func on(agent domain.AgentID) func(*domain.Session) {
	return func(s *domain.Session) {
		s.DesignatedAgents, s.DesignatedStrict = []domain.AgentID{agent}, true
	}
}

// within runs fn and fails the test if it has not returned after limit: a
// liveness check for code that, wrongly built, waits out a call timeout
// of an hour.
func within(t *testing.T, limit time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not finish within %s: a cycle is waiting on a hung agent", what, limit)
	}
}

// TestHungAgentHoldsUpOnlyItsOwnSessions: an agent that accepts calls and
// never answers (call timeout: an hour) leaves the cycles free, so a
// session on another agent starts and ends as if the hung one were not
// there; only the sessions on the hung agent wait.
func TestHungAgentHoldsUpOnlyItsOwnSessions(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		h.c.Configure(coordinator.Config{CallTimeout: time.Hour}, coordinator.GroupDefaults{})
		h.async = true
		h.agents.hang["agent-0"] = true
		stuck := h.submitWith(on("agent-0"), "sleep", "1", 1, domain.SingleNode)
		h.step() // its pull call to agent-0 now hangs
		fine := h.submitWith(on("agent-1"), "exit:0", "1", 1, domain.SingleNode)
		within(t, time.Minute, "starting a session on a healthy agent", func() {
			h.until(fine, domain.SessionRunning)
			h.agents.exitKernels()
			h.until(fine, domain.SessionTerminated)
		})
		h.wantStatus(stuck, domain.SessionScheduled)
		if n := h.agents.called("pull", "agent-0"); n != 1 {
			t.Errorf("agent-0 got %d pull calls while its first hung, want 1", n)
		}
	})
}

// TestTimedOutAgentIsIsolatedUntilItAnswers: once a call to an agent times
// out, the agent's sessions wait with a note naming it and no call is made
// to it, until a probe finds it answering; then they go on.
func TestTimedOutAgentIsIsolatedUntilItAnswers(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, func(g *domain.ResourceGroup) { g.MaxRetries = 100 })
		// The handler waits out the call, so the failure is recorded in
		// the step that made it.
		h.c.Configure(coordinator.Config{CallTimeout: 50 * time.Millisecond, CallWait: 5 * time.Second},
			coordinator.GroupDefaults{})
		h.agents.hang["agent-0"] = true
		id := h.submitWith(on("agent-0"), "sleep", "1", 1, domain.SingleNode)
		h.step()
		h.wantHistory(id, "PrepareSessions:NEED_RETRY")
		if _, ok := h.c.Isolated()["agent-0"]; !ok {
			t.Fatalf("agent-0 not isolated after its call timed out: %v", h.c.Isolated())
		}
		calls := h.agents.called("pull", "agent-0")
		h.steps(3)
		if n := h.agents.called("pull", "agent-0"); n != calls {
			t.Errorf("%d pull calls to an isolated agent, want none", n-calls)
		}
		h.wantHistory(id, "PrepareSessions:SKIPPED")
		if !strings.Contains(h.history(id), "agent agent-0 is not answering") {
			t.Errorf("the waiting session's history does not name the agent:\n%s", h.history(id))
		}
		// Still hung: the probe fails and the isolation holds.
		h.advance(2 * time.Second)
		h.step()
		h.c.WaitCalls()
		if h.agents.called("probe", "agent-0") == 0 {
			t.Fatal("an isolated agent was never probed")
		}
		if _, ok := h.c.Isolated()["agent-0"]; !ok {
			t.Fatal("a probe that timed out ended the isolation")
		}
		h.agents.hang["agent-0"] = false
		h.advance(time.Minute) // past the probe's backoff
		h.step()
		h.c.WaitCalls()
		if iso := h.c.Isolated(); len(iso) != 0 {
			t.Fatalf("isolation after a probe answered: %v", iso)
		}
		h.until(id, domain.SessionRunning)
	})
}

// TestOneCreateCallPerAgent: the kernels that one StartSessions run starts
// on an agent go in one call, whatever sessions they belong to.
func TestOneCreateCallPerAgent(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		var ids []domain.SessionID
		for i := range 6 {
			ids = append(ids, h.submitWith(on(domain.AgentID("agent-"+string(rune('0'+i%2)))), "sleep", "1", 1, domain.SingleNode))
		}
		for _, id := range ids {
			h.until(id, domain.SessionRunning)
		}
		for _, a := range []domain.AgentID{"agent-0", "agent-1"} {
			h.agents.mu.Lock()
			sizes := h.agents.sizes[a]
			h.agents.mu.Unlock()
			if len(sizes) != 1 || sizes[0] != 3 {
				t.Errorf("create calls to %s carried %v kernels, want one call of 3", a, sizes)
			}
		}
	})
}

// TestDueTimesFireAtTheirInstant: a running session's time limit and an
// agent's drain deadline end sessions when they pass, though no tick or
// sweep comes for an hour: Run wakes for them.
func TestDueTimesFireAtTheirInstant(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		h.clock.Set(time.Now())
		limited := h.submitWith(func(s *domain.Session) {
			on("agent-0")(s)
			s.TimeLimit = 1500 * time.Millisecond
		}, "sleep", "1", 1, domain.SingleNode)
		drained := h.submitWith(on("agent-1"), "sleep", "1", 1, domain.SingleNode)
		h.until(limited, domain.SessionRunning)
		h.until(drained, domain.SessionRunning)
		if err := h.st.DrainAgent(h.ctx, "agent-1", time.Now(), time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		live := coordinator.New(coordinator.Deps{Store: h.st, Agents: h.agents, Scheduler: scheduler.New(scheduler.NewRegistry())},
			coordinator.Config{ShortInterval: time.Hour, LongInterval: time.Hour})
		ctx, cancel := context.WithCancel(h.ctx)
		done := make(chan error, 1)
		go func() { done <- live.Run(ctx) }()
		defer func() {
			cancel()
			<-done
		}()
		// The history is written just after the move: wait for it.
		deadline := time.Now().Add(30 * time.Second)
		for _, w := range []struct {
			id   domain.SessionID
			said string
		}{{limited, "EndDueSessions SUCCESS RUNNING→TERMINATING"}, {drained, "drained: deadline"}} {
			for !strings.Contains(h.history(w.id), w.said) {
				if time.Now().After(deadline) {
					t.Fatalf("session %s not ended (%q); history:\n%s", w.id, w.said, h.history(w.id))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
}
