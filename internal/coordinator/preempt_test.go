package coordinator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// A high-priority session that finds the group full preempts the
// low-priority batch session holding the slots once it has run the group's
// minimum: the victim goes TERMINATING "preempted by <hi>", ends with
// outcome preempted and, having asked, comes back as a new PENDING
// attempt; the preemptor is placed only after the victim's kernel is gone
// (the harness checks invariant 1 every step). Before the minimum run
// time nothing is preempted.
func TestPreemptionEvictsAndRequeues(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, func(g *domain.ResourceGroup) {
			g.Preemption = domain.Preemption{Enabled: true, MinRuntime: 5 * time.Minute, Budget: 4, Window: time.Hour}
		})
		lo := h.submitWith(func(s *domain.Session) { s.Preemptible, s.Requeue = true, true }, "sleep", "8", 1, domain.SingleNode)
		h.until(lo, domain.SessionRunning)
		hi := h.submitWith(func(s *domain.Session) { s.Priority = 10 }, "sleep", "8", 1, domain.SingleNode)
		h.steps(3)
		h.wantStatus(lo, domain.SessionRunning)
		h.wantStatus(hi, domain.SessionPending)

		h.advance(5 * time.Minute)
		h.step()
		s := h.session(lo).Session
		if s.Status != domain.SessionTerminating && s.Status != domain.SessionTerminated {
			t.Fatalf("lo is %s after the minimum run time, want preempted", s.Status)
		}
		if s.StatusReason != "preempted by "+string(hi) || s.PreemptedBy != hi {
			t.Errorf("lo reason %q by %q", s.StatusReason, s.PreemptedBy)
		}
		h.until(hi, domain.SessionRunning)
		h.wantStatus(lo, domain.SessionTerminated)
		if got := h.session(lo).Session.Outcome; got != domain.OutcomePreempted {
			t.Errorf("lo outcome %s, want preempted", got)
		}
		// The new attempt has an id of its own, linked to lo: lo's id
		// (any prefix of it) names lo alone.
		mine, err := h.st.ListSessions(h.ctx, store.SessionFilter{IDPrefix: string(lo)})
		if err != nil || len(mine) != 1 {
			t.Fatalf("sessions with lo's id as prefix: %d (%v), want lo alone", len(mine), err)
		}
		all, err := h.st.ListSessions(h.ctx, store.SessionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var again domain.SessionID
		for _, s := range all {
			if s.RequeuedFrom == lo {
				again = s.ID
			}
		}
		h.wantStatus(again, domain.SessionPending)
		if !strings.Contains(h.history(lo), "preempted by "+string(hi)) || !strings.Contains(h.history(hi), "preempting "+string(lo)) ||
			!strings.Contains(h.history(lo), "requeued as "+string(again)) ||
			!strings.Contains(h.history(again), "new attempt of "+string(lo)) {
			t.Errorf("history lo %s\nhi %s\nrequeued %s", h.history(lo), h.history(hi), h.history(again))
		}
		// The new attempt is of lo's priority: it waits and preempts nobody.
		h.advance(10 * time.Minute)
		h.steps(3)
		h.wantStatus(again, domain.SessionPending)
		h.wantStatus(hi, domain.SessionRunning)
	})
}
