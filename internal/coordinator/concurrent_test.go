package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TestConcurrentEventsAndCycles runs the real Run loop while agents report
// kernel starts from other goroutines, racing the coordinator's own writes
// (kernel_started against StartSessions committing CREATING). No event may
// be lost: every session reaches RUNNING.
func TestConcurrentEventsAndCycles(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 4, nil)
		ctx, cancel := context.WithCancel(context.Background())
		agents := &instantAgents{epochs: h.agents.epochs, ctx: ctx}
		c := coordinator.New(coordinator.Deps{Store: h.st, Agents: agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
			Clock: clock.Wall}, coordinator.Config{ShortInterval: 20 * time.Millisecond, LongInterval: time.Hour})
		agents.c = c
		h.c = c
		// The harness registered agents on its fake clock; with the system
		// clock here, a sweep would find them silent, so sweeps stay out
		// (LongInterval) — agent loss has its own test.
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		var ids []domain.SessionID
		for range 40 {
			ids = append(ids, h.submit("sleep", "0.5", 1, domain.SingleNode))
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			running, err := h.st.ListSessions(h.ctx, store.SessionFilter{Statuses: []domain.SessionStatus{domain.SessionRunning}})
			if err != nil {
				t.Fatal(err)
			}
			if len(running) == len(ids) {
				break
			}
			if time.Now().After(deadline) {
				for _, id := range ids {
					if s := h.session(id); s.Session.Status != domain.SessionRunning {
						t.Fatalf("%d of %d RUNNING; %s is %v with kernels %+v", len(running), len(ids), id, s.Session.Status, s.Kernels)
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		agents.wg.Wait()
		h.check()
	})
}
