package coordinator_test

import (
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// A session's time limit counts from when it became RUNNING: time spent
// waiting first (here 30 min) is not charged. At 59 min of running it
// runs; at 60 min the sweep ends it with reason "time limit", and it ends
// a failure even though its kernel is destroyed cleanly. A session without
// a limit runs on; the agents were handed the limit.
func TestTimeLimitEndsSession(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		limited := h.submitWith(func(s *domain.Session) { s.TimeLimit = time.Hour }, "sleep", "1", 1, domain.SingleNode)
		free := h.submit("sleep", "1", 1, domain.SingleNode)
		h.advance(30 * time.Minute)
		h.until(limited, domain.SessionRunning)
		h.until(free, domain.SessionRunning)
		if got := h.agents.specs[h.session(limited).Kernels[0].ID].TimeLimit; got != time.Hour {
			t.Errorf("kernel created with time limit %s, want 1h", got)
		}
		if got := h.agents.specs[h.session(free).Kernels[0].ID].TimeLimit; got != 0 {
			t.Errorf("unlimited kernel created with time limit %s", got)
		}

		h.advance(59 * time.Minute)
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.wantStatus(limited, domain.SessionRunning)

		h.advance(time.Minute)
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.wantStatus(limited, domain.SessionTerminating)
		if got := h.session(limited).Session.StatusReason; got != "time limit" {
			t.Errorf("reason %q, want \"time limit\"", got)
		}
		h.until(limited, domain.SessionTerminated)
		s := h.session(limited).Session
		if s.Outcome != domain.OutcomeFailure {
			t.Errorf("outcome %q, want failure", s.Outcome)
		}
		if n := h.count(limited, "EndDueSessions:SUCCESS"); n != 1 {
			t.Errorf("history %s: want one EndDueSessions:SUCCESS", h.history(limited))
		}

		h.advance(1000 * time.Hour)
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.step()
		h.wantStatus(free, domain.SessionRunning)
	})
}

// An interactive session in a group with an idle timeout ends once unused
// for that long, counted from its last recorded activity; a batch session
// in the same group is never idle.
func TestIdleTimeoutEndsInteractiveSession(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, func(g *domain.ResourceGroup) { g.IdleTimeout = 10 * time.Minute })
		inter := h.submitWith(func(s *domain.Session) { s.Type = domain.TypeInteractive }, "sleep", "1", 1, domain.SingleNode)
		batch := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(inter, domain.SessionRunning)
		h.until(batch, domain.SessionRunning)

		h.advance(5 * time.Minute)
		if err := h.st.TouchSession(h.ctx, inter, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
		h.advance(9 * time.Minute) // idle 9 min since the touch
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.wantStatus(inter, domain.SessionRunning)

		h.advance(time.Minute) // idle 10 min
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.wantStatus(inter, domain.SessionTerminating)
		if got := h.session(inter).Session.StatusReason; got != "idle timeout" {
			t.Errorf("reason %q, want \"idle timeout\"", got)
		}
		h.until(inter, domain.SessionTerminated)
		h.wantStatus(batch, domain.SessionRunning)
	})
}
