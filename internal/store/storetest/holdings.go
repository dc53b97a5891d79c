package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// testSnapshotHoldings: a group in head-of-line reserve gets, in its
// snapshot, every kernel holding slots on its agents with its expected end
// (advance starts sessions running at at(20)): RUNNING from then plus the
// limit, not yet running from now plus the limit, TERMINATING now, no
// limit never (zero). Other groups' agents and a group in another mode
// get none.
func testSnapshotHoldings(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("r", func(g *domain.ResourceGroup) { g.HeadOfLine, g.ReservationDepth = domain.HOLReserve, 2 })
	f.group("s")
	f.agent("a1", "r", []string{"cpu", "64"})
	f.agent("a2", "r", []string{"cpu", "64"})
	f.agent("b1", "s", []string{"cpu", "64"})
	start := func(id, group string, n int, limit time.Duration, to domain.SessionStatus, agents ...domain.AgentID) {
		t.Helper()
		s := f.session(id, group, "alice", n, []string{"cpu", "2"}, func(s *domain.Session) {
			s.TimeLimit = limit
			if n > 1 {
				s.ClusterMode = domain.MultiNode
			}
		})
		f.schedule(group, s, agents...)
		f.advance(s.Session.ID, to)
	}
	start("gang", "r", 2, time.Hour, domain.SessionRunning, "a1", "a2")
	start("forever", "r", 1, 0, domain.SessionRunning, "a1")
	start("starting", "r", 1, 30*time.Minute, domain.SessionPreparing, "a2")
	start("ending", "r", 1, 0, domain.SessionTerminating, "a2")
	start("elsewhere", "s", 1, time.Hour, domain.SessionRunning, "b1")

	now := at(100)
	snap, err := f.s.LoadSnapshot(f.ctx, "r", now)
	f.must(err, "snapshot")
	cpu2 := f.slots("cpu", "2")
	run, term, prep := domain.SessionRunning, domain.SessionTerminating, domain.SessionPreparing
	want := []framework.Holding{
		{Agent: "a2", Session: "ending", Slots: cpu2, Ends: now, Status: term},
		{Agent: "a1", Session: "forever", Slots: cpu2, Status: run, Started: at(20)},
		{Agent: "a1", Session: "gang", Slots: cpu2, Ends: at(20).Add(time.Hour), Status: run, Started: at(20)},
		{Agent: "a2", Session: "gang", Slots: cpu2, Ends: at(20).Add(time.Hour), Status: run, Started: at(20)},
		{Agent: "a2", Session: "starting", Slots: cpu2, Ends: now.Add(30 * time.Minute), Status: prep},
	}
	got := snap.Holdings
	// Kernel IDs order the rows; compare as a set by session and agent.
	key := func(h framework.Holding) string { return string(h.Session) + "@" + string(h.Agent) }
	sortHoldings := func(hs []framework.Holding) {
		slices.SortFunc(hs, func(x, y framework.Holding) int { return strings.Compare(key(x), key(y)) })
	}
	sortHoldings(got)
	sortHoldings(want)
	if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) })); diff != "" {
		t.Errorf("holdings (-want +got):\n%s", diff)
	}
	snap, err = f.s.LoadSnapshot(f.ctx, "s", now)
	f.must(err, "snapshot of s")
	if len(snap.Holdings) != 0 {
		t.Errorf("group in skip mode got holdings %+v", snap.Holdings)
	}
	f.invariant()
}
