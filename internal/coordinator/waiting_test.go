package coordinator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestWaitingSessionsHistoryAndPendingBound: a round writes the history of
// the sessions that only wait again beside the plan's application; what it
// writes is unchanged by that. A session that keeps waiting has one
// SKIPPED entry naming its blocker, merged across rounds, while the one
// placed in the same round has its success; once past the group's PENDING
// bound the waiting one expires to CANCELLED instead, through the
// ordinary path.
func TestWaitingSessionsHistoryAndPendingBound(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, func(g *domain.ResourceGroup) { g.Timeouts.Pending = 10 * time.Minute })
		placed := h.submit("sleep", "6", 1, domain.SingleNode)
		waits := h.submit("sleep", "4", 1, domain.SingleNode)
		h.step()
		h.wantStatus(waits, domain.SessionPending)
		h.wantHistory(placed, "ScheduleNewSessions:SUCCESS")
		entries, err := h.st.History(h.ctx, waits)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Result != domain.ResultSkipped || !strings.Contains(entries[0].Message, "cpu") ||
			entries[0].From != domain.SessionPending || entries[0].To != domain.SessionPending {
			t.Fatalf("history of the waiting session:\n%s", h.history(waits))
		}

		// Another round: the same wait is merged into its entry.
		h.advance(5 * time.Minute)
		h.c.Mark()
		h.step()
		h.wantStatus(waits, domain.SessionPending)
		if n := h.count(waits, "ScheduleNewSessions:SKIPPED"); n != 1 {
			t.Fatalf("%d SKIPPED entries, want 1 merged:\n%s", n, h.history(waits))
		}

		// Past the 10 minute bound it expires.
		h.advance(6 * time.Minute)
		h.until(waits, domain.SessionCancelled)
		h.wantHistory(waits, "ScheduleNewSessions:EXPIRED")
		if n := h.count(waits, "ScheduleNewSessions:SKIPPED"); n != 1 {
			t.Fatalf("the expiring round also wrote a wait:\n%s", h.history(waits))
		}
	})
}
