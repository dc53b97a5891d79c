package coordinator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TestTerminateAll: the pending sessions are cancelled together, each
// with its UserCancel history; a running one is terminated as Terminate
// would; an ended one is left alone and not counted.
func TestTerminateAll(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		running := h.submit("sleep", "8", 1, domain.SingleNode)
		h.until(running, domain.SessionRunning)
		p1 := h.submit("sleep", "8", 1, domain.SingleNode)
		p2 := h.submit("sleep", "8", 1, domain.SingleNode)
		ended := h.submit("sleep", "8", 1, domain.SingleNode)
		if _, err := h.c.Terminate(h.ctx, ended, "before", false); err != nil {
			t.Fatal(err)
		}
		n, err := h.c.TerminateAll(h.ctx, []domain.SessionID{running, p1, p2, ended}, "array removed", false)
		if err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Fatalf("TerminateAll moved %d, want 3", n)
		}
		for _, id := range []domain.SessionID{p1, p2} {
			h.wantStatus(id, domain.SessionCancelled)
			h.wantHistory(id, "UserCancel:SUCCESS")
		}
		h.wantStatus(running, domain.SessionTerminating)
		h.wantHistory(running, "UserTerminate:SUCCESS")
		if got := h.count(ended, "UserCancel:SUCCESS"); got != 1 {
			t.Errorf("the ended session has %d UserCancel entries, want 1 (its own)", got)
		}
		h.until(running, domain.SessionTerminated)
		h.check()
	})
}

// noHistoryStore fails every separate AppendHistory, as a crash between
// a move and its history would leave the store.
type noHistoryStore struct{ store.Store }

func (noHistoryStore) AppendHistory(context.Context, []domain.HistoryEntry) error {
	return errors.New("history append refused")
}

// TestTerminateWritesHistoryWithTheMove: a user's cancel or terminate
// records its history in the move's own transaction, so no failure after
// the move can leave a session ended with no record of who ended it.
func TestTerminateWritesHistoryWithTheMove(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		running := h.submit("sleep", "8", 1, domain.SingleNode)
		h.until(running, domain.SessionRunning)
		pending := h.submit("sleep", "8", 1, domain.SingleNode)
		c := coordinator.New(coordinator.Deps{Store: noHistoryStore{h.st}, Agents: h.agents,
			Scheduler: scheduler.New(scheduler.NewRegistry()), Clock: h.clock}, coordinator.Config{CallTimeout: time.Second})
		if _, err := c.TerminateAll(h.ctx, []domain.SessionID{pending}, "array removed", false); err != nil {
			t.Fatalf("TerminateAll: %v", err)
		}
		if _, err := c.Terminate(h.ctx, running, "done", false); err != nil {
			t.Fatalf("Terminate: %v", err)
		}
		h.wantStatus(pending, domain.SessionCancelled)
		h.wantHistory(pending, "UserCancel:SUCCESS")
		h.wantStatus(running, domain.SessionTerminating)
		h.wantHistory(running, "UserTerminate:SUCCESS")
	})
}

// TestTerminateAllForced: with force a running session goes TERMINATING
// with its kernels killed at once, and one already TERMINATING has its
// kernels killed too and counts as ended, as Terminate with force does.
func TestTerminateAllForced(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		a := h.submit("sleep", "2", 1, domain.SingleNode)
		b := h.submit("sleep", "2", 1, domain.SingleNode)
		h.until(a, domain.SessionRunning)
		h.until(b, domain.SessionRunning)
		if _, err := h.c.Terminate(h.ctx, b, "first", false); err != nil {
			t.Fatal(err)
		}
		n, err := h.c.TerminateAll(h.ctx, []domain.SessionID{a, b}, "array removed", true)
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Fatalf("TerminateAll moved %d, want 2", n)
		}
		for _, id := range []domain.SessionID{a, b} {
			got := h.session(id)
			if k := got.Kernels[0]; k.Status != domain.KernelTerminated {
				t.Errorf("%s: kernel %v after a forced TerminateAll, want TERMINATED", id, k.Status)
			}
		}
		h.wantHistory(a, "UserTerminate:SUCCESS")
	})
}

// TestTerminateAllForcedDoesNotWaitOnAHungAgent: a forced TerminateAll
// kills each session's kernels side by side, so a session on a healthy
// agent is destroyed while the call to a hung agent for the session
// before it still waits out its (hour-long) timeout.
func TestTerminateAllForcedDoesNotWaitOnAHungAgent(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		stuck := h.submitWith(on("agent-0"), "sleep", "1", 1, domain.SingleNode)
		fine := h.submitWith(on("agent-1"), "sleep", "1", 1, domain.SingleNode)
		h.until(stuck, domain.SessionRunning)
		h.until(fine, domain.SessionRunning)
		h.c.Configure(coordinator.Config{CallTimeout: time.Hour}, coordinator.GroupDefaults{})
		h.agents.hang["agent-0"] = true
		ctx, cancel := context.WithCancel(h.ctx)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = h.c.TerminateAll(ctx, []domain.SessionID{stuck, fine}, "array removed", true)
		}()
		within(t, time.Minute, "destroying the kernel on the healthy agent", func() {
			for h.session(fine).Kernels[0].Status != domain.KernelTerminated {
				time.Sleep(10 * time.Millisecond)
			}
		})
		select {
		case <-done:
			t.Fatal("TerminateAll returned though its call to the hung agent cannot have")
		default:
		}
		cancel()
		<-done
	})
}
