package scheduler_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

// reserveSnap is the setting of most reservation rows: a gang "g" of two
// kernels of 8 cpu each waits at the head of the queue on two 8-cpu agents.
//
//	a1: 8 cpu held by r1 until T0+100s   free now 0
//	a2: 4 cpu held by r2 until T0+200s   free now 4
//
// Its shadow time is T0+200s: at +100s a1 is free (8) but a2 has only 4;
// at +200s both have 8. It reserves 8 cpu on a1 and a2 from then. A long
// session must leave on each agent its free slots less what is spare at
// the shadow time: a1 0 − (8 − 8) = 0, a2 4 − (8 − 8) = 4, so nothing of
// a2 is open to a session that would still run at +200s.
func reserveSnap(later ...*SessionB) *framework.Snapshot {
	sessions := append([]*SessionB{MakeSession("g", "cpu=8").Multi(2).Created(1).Limit(600)}, later...)
	snap := MakeSnapshot(Agents(
		MakeAgent("a1", "cpu=8").Occupied("cpu=8"),
		MakeAgent("a2", "cpu=8").Occupied("cpu=4"),
	), Sessions(sessions...))
	snap.Group.HeadOfLine = domain.HOLReserve
	snap.Group.ReservationDepth = 1
	snap.Holdings = []framework.Holding{Hold("a1", "r1", "cpu=8", 100), Hold("a2", "r2", "cpu=4", 200)}
	return snap
}

func TestReserveBackfill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		hol    domain.HeadOfLine
		later  *SessionB
		placed bool
	}{
		// ends +150s ≤ shadow +200s: gone before g needs a2.
		{"ends before the shadow time", domain.HOLReserve, MakeSession("s", "cpu=4").Created(2).Limit(150), true},
		// ends +200s ≤ +200s: "ends by" includes the shadow time itself.
		{"ends at the shadow time", domain.HOLReserve, MakeSession("s", "cpu=4").Created(2).Limit(200), true},
		// ends +201s > +200s on a2, whose 4 free cpu are all held: waits.
		{"runs past the shadow time", domain.HOLReserve, MakeSession("s", "cpu=4").Created(2).Limit(201), false},
		// no limit: runs past every shadow time.
		{"has no time limit", domain.HOLReserve, MakeSession("s", "cpu=4").Created(2), false},
		// skip has no reservation: the 4 free cpu on a2 go to s, and g
		// waits until s ends too.
		{"skip lets it pass", domain.HOLSkip, MakeSession("s", "cpu=4").Created(2), true},
		// reserve with depth 0 is skip.
		{"depth 0 reserves nothing", "", MakeSession("s", "cpu=4").Created(2), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := reserveSnap(tt.later)
			if tt.hol != "" {
				snap.Group.HeadOfLine = tt.hol
			} else {
				snap.Group.ReservationDepth = 0
			}
			plan := schedule(t, snap)
			_, got := placedOn(plan)["s"]
			if got != tt.placed {
				t.Fatalf("s placed = %v, want %v; blockers %+v", got, tt.placed, blockersOf(plan, "s"))
			}
			if _, ok := placedOn(plan)["g"]; ok {
				t.Fatal("g placed, but it fits nowhere now")
			}
		})
	}
}

func TestReservePlanData(t *testing.T) {
	t.Parallel()
	plan := schedule(t, reserveSnap(
		MakeSession("short", "cpu=2").Created(2).Limit(60),
		MakeSession("long", "cpu=2").Created(3).Limit(3600),
	))
	// short (ends +60s) backfills on a2; long would run past +200s on a2,
	// where everything free is held, and a1 is full.
	want := []framework.Reservation{{Session: "g", Start: T0.Add(200 * time.Second), Backfilled: 1,
		Agents: []framework.ReservedSlots{
			{Agent: "a1", Slots: Slots("cpu=8"), Kernels: 1},
			{Agent: "a2", Slots: Slots("cpu=8"), Kernels: 1},
		}}}
	if diff := cmp.Diff(want, plan.Reservations); diff != "" {
		t.Fatalf("reservations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]domain.SessionID{"short"}, plan.Backfilled); diff != "" {
		t.Fatalf("backfilled (-want +got):\n%s", diff)
	}
	reg := Registry()
	g := blockersOf(plan, "g")
	last := g[len(g)-1]
	if got, want := last.Message(reg), "reserved on a1, a2 from 00:03 UTC, Jan 1; 1 sessions backfilled around it this round"; got != want {
		t.Errorf("g's reservation reads %q, want %q", got, want)
	}
	last.Requested = 0 // as the coordinator writes it to the history
	if got, want := last.Message(reg), "reserved on a1, a2 from 00:03 UTC, Jan 1"; got != want {
		t.Errorf("g's reservation without a count reads %q, want %q", got, want)
	}
	long := blockersOf(plan, "long")
	if got := long[len(long)-1].Message(reg); !strings.Contains(got, "reserved for session g from 00:03") {
		t.Errorf("long's last blocker reads %q, want it to name g's reservation", got)
	}
}

func TestReserveUsesSlotsTheReservationDoesNotNeed(t *testing.T) {
	t.Parallel()
	// g needs 8 cpu on each of two agents. a3 (8 free) and a1 (free at
	// +100s) give it that at +100s, first fit in agent order; a2 is not
	// needed, so a session with no limit may take a2's 4 free cpu, but
	// none of a3's: a3 0 free after the hold of 8 − (8 − 8) = 8.
	snap := reserveSnap(MakeSession("s", "cpu=4").Created(2), MakeSession("t", "cpu=4").Created(3))
	snap.Agents = append(snap.Agents, MakeAgent("a3", "cpu=8").Obj())
	plan := schedule(t, snap)
	if got, want := plan.Reservations[0].Start, T0.Add(100*time.Second); !got.Equal(want) {
		t.Fatalf("shadow time %v, want %v", got, want)
	}
	if got := plan.Reservations[0].Scope(); got != "a1, a3" {
		t.Fatalf("reserved on %s, want a1, a3", got)
	}
	if diff := cmp.Diff(map[string][]string{"s": {"a2"}}, placedOn(plan)); diff != "" {
		t.Fatalf("placements (-want +got):\n%s", diff)
	}
	// t waits though a3 shows 8 cpu free: its blocker says they are held
	// for g's reservation, not that none is free (issue 32).
	reg := Registry()
	for _, b := range blockersOf(plan, "t") {
		if b.Kind != framework.BlockCapacity || b.Slot != "cpu" {
			continue
		}
		if got, want := b.Message(reg), "not enough free cpu: requested 4, at most 0 free on any eligible agent, not counting 8 held for a reservation"; got != want {
			t.Errorf("t's capacity blocker reads %q, want %q", got, want)
		}
		return
	}
	t.Errorf("t has no cpu capacity blocker: %+v", blockersOf(plan, "t"))
}

func TestReserveDepthAndNoLimit(t *testing.T) {
	t.Parallel()
	t.Run("depth bounds the reservations", func(t *testing.T) {
		t.Parallel()
		// Two gangs wait; depth 1 reserves for the first only, and the
		// second waits with no reservation of its own.
		snap := reserveSnap(MakeSession("h", "cpu=8").Multi(2).Created(2))
		plan := schedule(t, snap)
		if got := len(plan.Reservations); got != 1 {
			t.Fatalf("%d reservations, want 1", got)
		}
		for _, b := range blockersOf(plan, "h") {
			if b.Kind == framework.BlockReservation && !strings.HasPrefix(b.Scope, "session:") {
				t.Fatalf("h holds a reservation: %+v", b)
			}
		}
		snap.Group.ReservationDepth = 2
		plan = schedule(t, snap)
		// h comes after g: g holds a1 and a2 from +200s on, and nothing
		// frees them for planning after that, so h gets no shadow time.
		if got := len(plan.Reservations); got != 1 {
			t.Fatalf("depth 2: %d reservations, want 1 (h can never start while g holds both agents)", got)
		}
	})
	t.Run("sessions without a limit never end", func(t *testing.T) {
		t.Parallel()
		// r2 on a2 has no limit: g can never have 8 cpu there, so no
		// reservation is made and the round is skip's.
		snap := reserveSnap(MakeSession("s", "cpu=4").Created(2))
		snap.Holdings[1] = Hold("a2", "r2", "cpu=4", 0)
		plan := schedule(t, snap)
		if len(plan.Reservations) != 0 {
			t.Fatalf("reservations %+v, want none", plan.Reservations)
		}
		if _, ok := placedOn(plan)["s"]; !ok {
			t.Fatal("s not placed with no reservation to protect")
		}
	})
	t.Run("a higher band's reservation holds back a lower band", func(t *testing.T) {
		t.Parallel()
		snap := reserveSnap(MakeSession("low", "cpu=4").Created(0).Priority(-1))
		plan := schedule(t, snap)
		if _, ok := placedOn(plan)["low"]; ok {
			t.Fatal("a lower band's long session took slots reserved for g")
		}
		if !slices.Equal(plan.Tried, []domain.SessionID{"g", "low"}) {
			t.Fatalf("tried %v, want g then low", plan.Tried)
		}
	})
}

func TestReserveKernelCap(t *testing.T) {
	t.Parallel()
	// a1 takes at most 2 kernels and runs 2, ending at +100s and +300s.
	// g, one node with 2 kernels, needs both places: at +100s one is free
	// (1 running + 2 > 2), at +300s both, so its shadow time is +300s
	// although the cpu would do at once.
	snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=8").Occupied("cpu=2").MaxKernels(2, 2)), Sessions(
		MakeSession("g", "cpu=1").Single(2).Created(1),
		MakeSession("s", "cpu=1").Created(2),
	))
	snap.Group.HeadOfLine, snap.Group.ReservationDepth = domain.HOLReserve, 1
	snap.Holdings = []framework.Holding{Hold("a1", "r1", "cpu=1", 100), Hold("a1", "r2", "cpu=1", 300)}
	plan := schedule(t, snap)
	if len(plan.Reservations) != 1 || !plan.Reservations[0].Start.Equal(T0.Add(300*time.Second)) {
		t.Fatalf("reservations %+v, want one from +300s", plan.Reservations)
	}
	if len(plan.Placements) != 0 {
		t.Fatalf("placed %v, want nothing", placedOn(plan))
	}
}

// TestReserveHoldsOffJobGangs: a job's gang behind a reservation is held
// off its reserved slots as a lone session is. In reserveSnap, a2's 4 free
// cpu are all held for g from +200s: two 2-cpu members (min 2) that would
// run until +300s may not take them, two that end by +200s may.
func TestReserveHoldsOffJobGangs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		limit  int
		placed bool
	}{{300, false}, {200, true}} {
		snap := reserveSnap(MakeSession("j-0", "cpu=2").Job("j").Created(2).Limit(tt.limit),
			MakeSession("j-1", "cpu=2").Job("j").Created(3).Limit(tt.limit))
		snap.Jobs = map[domain.JobID]framework.JobInfo{"j": {MinAvailable: 2, Live: 2}}
		plan := schedule(t, snap)
		placed := placedOn(plan)
		_, p0 := placed["j-0"]
		_, p1 := placed["j-1"]
		if p0 != tt.placed || p1 != tt.placed {
			t.Errorf("limit %ds: members placed %v %v, want %v; blockers %+v", tt.limit, p0, p1, tt.placed, blockersOf(plan, "j-0"))
		}
		if tt.placed && !slices.Contains(plan.Backfilled, "j-0") {
			t.Errorf("limit %ds: a gang placed past the reservation is not listed as backfilled: %v", tt.limit, plan.Backfilled)
		}
	}
}
