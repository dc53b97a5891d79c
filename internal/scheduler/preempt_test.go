package scheduler_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

// running is a RUNNING, preemptible kernel of session id on agent, at
// priority prio, started ranSec seconds before T0.
func running(agent, id, slots string, prio, ranSec int) framework.Holding {
	h := Hold(agent, id, slots, 0)
	h.Status, h.Priority, h.Preemptible = domain.SessionRunning, prio, true
	h.Started = T0.Add(-time.Duration(ranSec) * time.Second)
	return h
}

// preemptSnap is two 8-cpu agents, full, with preemption on (min run
// time 60 s, no budget, window 1 h):
//
//	a1: lo1 4 cpu prio 0 ran 600 s, lo2 4 cpu prio 0 ran 100 s   free 0
//	a2: mid 8 cpu prio 5 ran 600 s                                free 0
func preemptSnap(holds []framework.Holding, sessions ...*SessionB) *framework.Snapshot {
	snap := MakeSnapshot(Agents(
		MakeAgent("a1", "cpu=8").Occupied("cpu=8"),
		MakeAgent("a2", "cpu=8").Occupied("cpu=8"),
	), Sessions(sessions...))
	snap.Group.HeadOfLine = domain.HOLSkip
	snap.Group.Preemption = domain.Preemption{Enabled: true, MinRuntime: time.Minute, Window: time.Hour}
	if holds == nil {
		holds = []framework.Holding{running("a1", "lo1", "cpu=4", 0, 600), running("a1", "lo2", "cpu=4", 0, 100),
			running("a2", "mid", "cpu=8", 5, 600)}
	}
	snap.Holdings = holds
	return snap
}

func victimsOf(plan framework.Plan) []string {
	var out []string
	for _, p := range plan.Preemptions {
		out = append(out, string(p.Victim)+"<"+string(p.Preemptor))
	}
	return out
}

func TestPreemptVictims(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*framework.Snapshot)
		holds []framework.Holding
		s     *SessionB
		want  []string
		waits bool // s waits with a preempting blocker
	}{
		// needs 4 on one agent: a1 with one victim (lo2: prio 0, 100 s lost)
		// beats a2 (mid: prio 5); lo2 ran less than lo1 (100 < 600 s).
		{name: "fewest, lowest, least work", s: MakeSession("hi", "cpu=4").Priority(10), want: []string{"lo2<hi"}, waits: true},
		// needs 8: a1 with two victims (0+0) or a2 with one (mid, prio 5):
		// count first, so mid.
		{name: "count before priority", s: MakeSession("hi", "cpu=8").Priority(10), want: []string{"mid<hi"}, waits: true},
		// prio 5 may evict only lo1/lo2 (strictly lower), 4+4 = 8 on a1.
		{name: "strictly lower only", s: MakeSession("hi", "cpu=8").Priority(5), want: []string{"lo1<hi", "lo2<hi"}, waits: true},
		// prio 0 evicts nobody: no band is lower.
		{name: "same band never", s: MakeSession("hi", "cpu=4").Priority(0)},
		// 12 cpu on one 8-cpu agent: no victims can make room.
		{name: "not enough anywhere", s: MakeSession("hi", "cpu=12").Priority(10)},
		// min run 200 s: lo2 (100 s) is too young; lo1 (600 s) goes.
		{name: "min runtime", edit: func(s *framework.Snapshot) { s.Group.Preemption.MinRuntime = 200 * time.Second },
			s: MakeSession("hi", "cpu=4").Priority(10), want: []string{"lo1<hi"}, waits: true},
		// lo2 opted out: lo1 instead.
		{name: "not preemptible", holds: []framework.Holding{running("a1", "lo1", "cpu=4", 0, 600),
			func() framework.Holding { h := running("a1", "lo2", "cpu=4", 0, 100); h.Preemptible = false; return h }(),
			running("a2", "mid", "cpu=8", 5, 600)},
			s: MakeSession("hi", "cpu=4").Priority(10), want: []string{"lo1<hi"}, waits: true},
		// budget 2 with 2 used in the window: nothing left.
		{name: "budget spent", edit: func(s *framework.Snapshot) {
			s.Group.Preemption.Budget = 2
			s.Preemptions = []framework.PreemptionRecord{{Victim: "x", Preemptor: "y", At: T0.Add(-time.Minute)},
				{Victim: "x2", Preemptor: "y", At: T0.Add(-time.Minute)}}
		}, s: MakeSession("hi", "cpu=4").Priority(10)},
		// budget 2, 2 used, but one 2 h ago, outside the 1 h window: 1 left.
		{name: "budget window", edit: func(s *framework.Snapshot) {
			s.Group.Preemption.Budget = 2
			s.Preemptions = []framework.PreemptionRecord{{Victim: "x", Preemptor: "y", At: T0.Add(-time.Minute)},
				{Victim: "x2", Preemptor: "y", At: T0.Add(-2 * time.Hour)}}
		}, s: MakeSession("hi", "cpu=4").Priority(10), want: []string{"lo2<hi"}, waits: true},
		// budget 1 left but 8 cpu on a1 needs 2 victims: a2's mid is 1.
		{name: "budget bounds the set", edit: func(s *framework.Snapshot) { s.Group.Preemption.Budget = 1 },
			s: MakeSession("hi", "cpu=8").Priority(3)},
		// lo2 preempted hi within the window: hi may not preempt lo2 back.
		{name: "no cycle", edit: func(s *framework.Snapshot) {
			s.Preemptions = []framework.PreemptionRecord{{Victim: "hi", Preemptor: "lo2", At: T0.Add(-time.Minute)}}
		}, s: MakeSession("hi", "cpu=4").Priority(10), want: []string{"lo1<hi"}, waits: true},
		// a1: lo1 2 cpu and lo2 2 cpu (prio 0), big 4 cpu (prio 1); needs 4:
		// cheapest first would take lo1+lo2 (2 victims), but big alone is 1.
		{name: "one victim before two cheaper", holds: []framework.Holding{running("a1", "lo1", "cpu=2", 0, 600),
			running("a1", "lo2", "cpu=2", 0, 600), running("a1", "big", "cpu=4", 1, 600), running("a2", "mid", "cpu=8", 5, 600)},
			s: MakeSession("hi", "cpu=4").Priority(10), want: []string{"big<hi"}, waits: true},
		// off: nothing.
		{name: "off", edit: func(s *framework.Snapshot) { s.Group.Preemption.Enabled = false },
			s: MakeSession("hi", "cpu=4").Priority(10)},
		// a gang of 2×8: a2's mid (1) plus a1's lo1+lo2 (2) = 3 victims.
		{name: "gang", s: MakeSession("hi", "cpu=8").Priority(10).Multi(2),
			want: []string{"lo1<hi", "lo2<hi", "mid<hi"}, waits: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := preemptSnap(tt.holds, tt.s)
			if tt.edit != nil {
				tt.edit(snap)
			}
			plan := schedule(t, snap)
			if diff := cmp.Diff(tt.want, victimsOf(plan)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
			if len(plan.Placements) != 0 {
				t.Errorf("placed %v: a preemptor waits for its victims' slots", placedOn(plan))
			}
			bs := blockersOf(plan, "hi")
			got := len(bs) > 0 && bs[len(bs)-1].Kind == framework.BlockPreempting
			if got != tt.waits {
				t.Errorf("preempting blocker = %v, want %v: %+v", got, tt.waits, bs)
			}
		})
	}
}

// TestPreemptWaitsForVictims: a preemptor whose victim is still
// TERMINATING evicts nobody else and holds what is free for it, so a lower
// session behind it cannot take those slots.
//
//	a1: lo1 4 cpu TERMINATING (preempted by hi), 4 free
//	hi needs 8: 4 free + 4 coming back. low (prio 0, 4 cpu) must not get
//	the 4 free.
func TestPreemptWaitsForVictims(t *testing.T) {
	t.Parallel()
	ending := running("a1", "lo1", "cpu=4", 0, 600)
	ending.Status, ending.PreemptedBy = domain.SessionTerminating, "hi"
	snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=8").Occupied("cpu=4")),
		Sessions(MakeSession("hi", "cpu=8").Priority(10), MakeSession("low", "cpu=4").Created(2)))
	snap.Group.HeadOfLine = domain.HOLSkip
	snap.Group.Preemption = domain.Preemption{Enabled: true}
	snap.Holdings = []framework.Holding{ending, running("a1", "lo3", "cpu=0", 0, 600)}
	plan := schedule(t, snap)
	if len(plan.Preemptions) != 0 {
		t.Errorf("preempted %v while its victim is still ending", victimsOf(plan))
	}
	if len(plan.Placements) != 0 {
		t.Errorf("placed %v on the slots hi waits for", placedOn(plan))
	}
	bs := blockersOf(plan, "hi")
	if len(bs) == 0 || bs[len(bs)-1].Kind != framework.BlockPreempting || bs[len(bs)-1].Scope != "lo1" {
		t.Errorf("hi blockers %+v, want preempting lo1", bs)
	} else if got, want := bs[len(bs)-1].Message(nil), "preempting lo1; starts when their slots are released"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// TestPreemptProperty: whatever the cluster, victims are strictly lower
// priority than their preemptor, preemptible, past the minimum run time,
// within the budget, never preempt back one that preempted their
// preemptor, each evicted once, and no preemptor is placed the same
// round.
func TestPreemptProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		reg := Registry()
		nAgents := rapid.IntRange(1, 4).Draw(t, "agents")
		var agents []domain.Agent
		var holds []framework.Holding
		info := map[domain.SessionID]framework.Holding{}
		for i := range nAgents {
			id := fmt.Sprintf("a%d", i)
			capacity := reg.NewVec()
			capacity[0] = 8000
			occ := reg.NewVec()
			for j := range rapid.IntRange(0, 3).Draw(t, "holds") {
				q := rapid.IntRange(1, 8-int(occ[0]/1000)+1).Draw(t, "cpu")
				if int(occ[0]/1000)+q > 8 {
					break
				}
				h := running(id, fmt.Sprintf("r%d_%d", i, j), fmt.Sprintf("cpu=%d", q),
					rapid.IntRange(0, 3).Draw(t, "prio"), rapid.IntRange(0, 1000).Draw(t, "ran"))
				h.Preemptible = rapid.Bool().Draw(t, "preemptible")
				occ[0] += domain.Quantity(q * 1000)
				holds = append(holds, h)
				info[h.Session] = h
			}
			agents = append(agents, domain.Agent{ID: domain.AgentID(id), ResourceGroup: "default", Architecture: "x86_64",
				Status: domain.AgentAlive, Schedulable: true, Capacity: capacity, Occupied: occ, KernelCount: 0})
		}
		var sessions []*SessionB
		for i := range rapid.IntRange(1, 5).Draw(t, "pending") {
			b := MakeSession(fmt.Sprintf("p%d", i), fmt.Sprintf("cpu=%d", rapid.IntRange(1, 8).Draw(t, "req"))).
				Priority(rapid.IntRange(0, 4).Draw(t, "pprio")).Created(i)
			if rapid.Bool().Draw(t, "gang") {
				b = b.Multi(2)
			}
			sessions = append(sessions, b)
		}
		snap := MakeSnapshot(agents, Sessions(sessions...))
		snap.Holdings = holds
		pol := domain.Preemption{Enabled: true, MinRuntime: time.Duration(rapid.IntRange(0, 500).Draw(t, "min")) * time.Second,
			Budget: rapid.IntRange(0, 3).Draw(t, "budget"), Window: time.Hour}
		snap.Group.Preemption = pol
		var cycles [][2]domain.SessionID
		for range rapid.IntRange(0, 3).Draw(t, "records") {
			r := framework.PreemptionRecord{Victim: domain.SessionID(fmt.Sprintf("p%d", rapid.IntRange(0, 4).Draw(t, "rv"))),
				At: T0.Add(-time.Minute)}
			if len(holds) > 0 {
				r.Preemptor = holds[rapid.IntRange(0, len(holds)-1).Draw(t, "rp")].Session
			}
			snap.Preemptions = append(snap.Preemptions, r)
			cycles = append(cycles, [2]domain.SessionID{r.Victim, r.Preemptor})
		}
		plan, err := scheduler.New(scheduler.NewRegistry()).Schedule(snap)
		if err != nil {
			t.Fatal(err)
		}
		prio := map[domain.SessionID]int{}
		for _, p := range snap.Pending {
			prio[p.Session.ID] = p.Session.Priority
		}
		if pol.Budget > 0 && len(plan.Preemptions) > max(0, pol.Budget-len(snap.Preemptions)) {
			t.Fatalf("%d preemptions with %d of budget %d used", len(plan.Preemptions), len(snap.Preemptions), pol.Budget)
		}
		seen := map[domain.SessionID]bool{}
		for _, p := range plan.Preemptions {
			v := info[p.Victim]
			switch {
			case v.Priority >= prio[p.Preemptor]:
				t.Fatalf("%s (prio %d) preempted by %s (prio %d)", p.Victim, v.Priority, p.Preemptor, prio[p.Preemptor])
			case !v.Preemptible:
				t.Fatalf("%s is not preemptible", p.Victim)
			case T0.Sub(v.Started) < pol.MinRuntime:
				t.Fatalf("%s ran %s < min %s", p.Victim, T0.Sub(v.Started), pol.MinRuntime)
			case seen[p.Victim]:
				t.Fatalf("%s evicted twice", p.Victim)
			case slices.Contains(cycles, [2]domain.SessionID{p.Preemptor, p.Victim}):
				t.Fatalf("%s preempted %s, which preempted it within the window", p.Preemptor, p.Victim)
			}
			seen[p.Victim] = true
			if _, ok := placedOn(plan)[string(p.Preemptor)]; ok {
				t.Fatalf("preemptor %s placed in the round that evicts its victims", p.Preemptor)
			}
		}
	})
}
