package coordinator_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TestRandomFaults pushes 1,000 sessions of mixed images and shapes through
// random faults — failing and timing-out calls, agents going down and coming
// back, lost, duplicated and reordered events, user terminations, time
// jumps past residence bounds — and checks DESIGN.md's invariants after
// every step (harness.check). At the end, with the faults off and running
// sessions terminated, every session must end (cancelled ones with a
// reason) and every agent's occupied slots must be zero.
func TestRandomFaults(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		sessions := 1000
		if testing.Short() {
			sessions = 200
		}
		h := newHarness(t, engine, 6, nil)
		rng := rand.New(rand.NewPCG(42, uint64(len(engine))))
		images := []string{"sleep", "exit:0", "exit:1", "no-such-image"}
		var ids []domain.SessionID
		for len(ids) < sessions {
			for range 50 {
				mode, n := domain.SingleNode, 1
				if rng.IntN(10) == 0 {
					mode, n = domain.MultiNode, 2+rng.IntN(2)
				}
				ids = append(ids, h.submit(images[rng.IntN(len(images))], fmt.Sprint(1+rng.IntN(3)), n, mode))
			}
			h.agents.callErr = 0.1 * rng.Float64()
			h.agents.drop = 0.2 * rng.Float64()
			h.agents.dup = 0.2 * rng.Float64()
			h.agents.reorder = rng.IntN(2) == 0
			for a := range 6 {
				h.agents.down[domain.AgentID(fmt.Sprintf("agent-%d", a))] = rng.IntN(10) == 0
			}
			for range 4 {
				h.step()
				h.agents.exitKernels()
				if rng.IntN(3) == 0 {
					id := ids[rng.IntN(len(ids))]
					if _, err := h.c.Terminate(h.ctx, id, "chaos", false); err != nil {
						t.Fatal(err)
					}
				}
				h.advance(time.Duration(rng.IntN(120)) * time.Second)
				if err := h.c.Sweep(h.ctx); err != nil {
					t.Fatal(err)
				}
				h.check()
			}
		}
		// Calm: no faults, agents back, time passes, everything settles.
		h.agents.callErr, h.agents.drop, h.agents.dup, h.agents.reorder = 0, 0, 0, false
		for a := range h.agents.down {
			h.agents.down[a] = false
		}
		for range 10 {
			h.advance(time.Minute)
			h.step()
			h.agents.exitKernels()
		}
		// Drain: end whatever runs until nothing is left waiting.
		for round := 0; ; round++ {
			live, err := h.st.ListSessions(h.ctx, store.SessionFilter{Statuses: []domain.SessionStatus{
				domain.SessionPending, domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared,
				domain.SessionCreating, domain.SessionRunning, domain.SessionTerminating}})
			if err != nil {
				t.Fatal(err)
			}
			if len(live) == 0 {
				break
			}
			if round > 400 {
				t.Fatalf("%d sessions never ended, e.g. %s in %v:\n%s", len(live), live[0].ID, live[0].Status, h.history(live[0].ID))
			}
			for _, s := range live {
				if s.Status == domain.SessionRunning {
					if _, err := h.c.Terminate(h.ctx, s.ID, "drain", false); err != nil {
						t.Fatal(err)
					}
				}
			}
			h.advance(10 * time.Second)
			h.step()
			h.agents.exitKernels()
		}
		agents, err := h.st.ListAgents(h.ctx, store.AgentFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range agents {
			if !a.Occupied.IsZero() || a.KernelCount != 0 {
				t.Errorf("agent %s still holds %v (%d kernels) with every session ended", a.ID, a.Occupied, a.KernelCount)
			}
		}
		counts := map[domain.SessionStatus]int{}
		for _, id := range ids {
			s := h.session(id).Session
			counts[s.Status]++
			if s.Status == domain.SessionCancelled && s.StatusReason == "" {
				t.Errorf("session %s cancelled without a reason", id)
			}
		}
		t.Logf("%s: %d sessions: %v", engine, len(ids), counts)
	})
}
