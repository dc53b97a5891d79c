package coordinator_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// countingStore counts scheduling rounds by their snapshots.
type countingStore struct {
	store.Store
	snapshots atomic.Int64
}

func (s *countingStore) LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error) {
	s.snapshots.Add(1)
	return s.Store.LoadSnapshot(ctx, group, now)
}

// TestIdleRoundsAreSkipped: a round that could only repeat the last idle
// one is not run, and every kind of change that could let a waiting
// session go — made through the store, as another manager would — brings
// the next round back.
func TestIdleRoundsAreSkipped(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			h := newHarness(t, engine, 1, func(g *domain.ResourceGroup) { g.Timeouts.Pending = time.Hour })
			cs := &countingStore{Store: h.st}
			h.c = coordinator.New(coordinator.Deps{Store: cs, Agents: h.agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
				Clock: h.clock}, coordinator.Config{CallTimeout: time.Second})
			rounds := func(what string, cycles int, want int64) {
				t.Helper()
				before := cs.snapshots.Load()
				h.steps(cycles)
				if got := cs.snapshots.Load() - before; got != want {
					t.Errorf("%s: %d rounds in %d cycles, want %d", what, got, cycles, want)
				}
			}
			rounds("empty queue", 3, 1)
			h.submit("sleep", "6", 1, domain.SingleNode) // placed
			waiting := h.submit("sleep", "6", 1, domain.SingleNode)
			// One round places the first; the next must run again after a
			// placement, then places nothing; later ones are skipped.
			rounds("placement, then idle", 5, 2)
			if s := h.session(waiting).Session.Status; s != domain.SessionPending {
				t.Fatalf("second session is %v, want PENDING", s)
			}
			if err := h.st.SetAgentSchedulable(h.ctx, "agent-0", true); err != nil {
				t.Fatal(err)
			}
			rounds("agent written", 3, 1)
			h.submit("sleep", "6", 1, domain.SingleNode)
			rounds("session queued", 3, 1)
			// The bound's round expires both waiting sessions; ending is a
			// relevant change, so one more round finds the queue empty.
			h.clock.Advance(time.Hour + time.Second)
			rounds("pending bound passed", 3, 2)
		})
	}
}
