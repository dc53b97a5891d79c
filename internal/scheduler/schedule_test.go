package scheduler_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

func schedule(t *testing.T, snap *framework.Snapshot) framework.Plan {
	t.Helper()
	plan, err := scheduler.New(scheduler.NewRegistry()).Schedule(snap)
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	return plan
}

// placedOn maps each placed session to the agents of its kernels.
func placedOn(plan framework.Plan) map[string][]string {
	out := map[string][]string{}
	for _, p := range plan.Placements {
		for _, k := range p.Kernels {
			out[string(p.Session)] = append(out[string(p.Session)], string(k.Agent))
		}
	}
	return out
}

func blockersOf(plan framework.Plan, id string) []framework.Blocker {
	for _, ds := range [][]framework.Decision{plan.Waiting, plan.Impossible} {
		for _, d := range ds {
			if string(d.Session) == id {
				return d.Blockers
			}
		}
	}
	return nil
}

func impossible(plan framework.Plan) []string {
	var out []string
	for _, d := range plan.Impossible {
		out = append(out, string(d.Session))
	}
	return out
}

func q(slot, s string) domain.Quantity {
	_, v, err := Registry().Parse(slot, s)
	if err != nil {
		panic(err)
	}
	return v
}

func TestScheduleOrderAndPriority(t *testing.T) {
	t.Parallel()
	// One agent with 4 cpu; every session asks 4, so exactly one is placed.
	tests := []struct {
		name     string
		seq      string
		sessions []*SessionB
		want     string
	}{
		{"fifo takes the oldest", "fifo", []*SessionB{
			MakeSession("new", "cpu=4").Created(20), MakeSession("old", "cpu=4").Created(10),
		}, "old"},
		{"lifo takes the newest", "lifo", []*SessionB{
			MakeSession("old", "cpu=4").Created(10), MakeSession("new", "cpu=4").Created(20),
		}, "new"},
		{"equal times break by id", "fifo", []*SessionB{
			MakeSession("b", "cpu=4"), MakeSession("a", "cpu=4"),
		}, "a"},
		{"lifo equal times break by id too", "lifo", []*SessionB{
			MakeSession("b", "cpu=4"), MakeSession("a", "cpu=4"),
		}, "a"},
		{"higher priority band first, whatever its age", "fifo", []*SessionB{
			MakeSession("old-low", "cpu=4").Created(0), MakeSession("new-high", "cpu=4").Created(99).Priority(5),
		}, "new-high"},
		{"priority beats DRF share", "drf", []*SessionB{
			MakeSession("fair", "cpu=4").User("idle"), MakeSession("prio", "cpu=4").User("busy").Priority(1),
		}, "prio"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=4,mem=8g")), Sessions(tc.sessions...))
			snap.Group.Sequencer = tc.seq
			plan := schedule(t, snap)
			got := placedOn(plan)
			if len(got) != 1 || got[tc.want] == nil {
				t.Fatalf("placed %v, want only %s", got, tc.want)
			}
			if n := len(plan.Waiting); n != len(tc.sessions)-1 {
				t.Fatalf("%d waiting, want %d", n, len(tc.sessions)-1)
			}
		})
	}
}

func TestDRFUpdatesSharesWithinRound(t *testing.T) {
	t.Parallel()
	// Capacity 8 cpu. alice already holds 2 (share 2/10 after the
	// capacity below), bob nothing. Each asks 2 cpu per session, 3 sessions
	// each, all created at once with alice's older. DRF must alternate:
	// bob (0) → bob has 2/10=0.2 = alice's 0.2, tie → older head (alice)
	// → alice 0.4, bob 0.2 → bob → bob 0.4 = alice 0.4 → alice … The
	// agent holds 8 free: 4 sessions fit, two each.
	snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=10,mem=100g").Occupied("cpu=2")), Sessions(
		MakeSession("a1", "cpu=2").User("alice").Created(1),
		MakeSession("a2", "cpu=2").User("alice").Created(2),
		MakeSession("a3", "cpu=2").User("alice").Created(3),
		MakeSession("b1", "cpu=2").User("bob").Created(4),
		MakeSession("b2", "cpu=2").User("bob").Created(5),
		MakeSession("b3", "cpu=2").User("bob").Created(6),
	))
	snap.Group.Sequencer = "drf"
	snap.Usage.GroupUsers = map[string]domain.Vec{"alice": Slots("cpu=2")}
	plan := schedule(t, snap)
	var got []string
	for _, p := range plan.Placements {
		got = append(got, string(p.Session))
	}
	want := []string{"b1", "a1", "b2", "a2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("placement order (-want +got):\n%s", diff)
	}
}

func TestHeadOfLine(t *testing.T) {
	t.Parallel()
	// 4 cpu free. "big" (8 cpu, oldest) cannot fit; "small" (2 cpu) can.
	mk := func(hol domain.HeadOfLine) framework.Plan {
		snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=4,mem=8g")), Sessions(
			MakeSession("big", "cpu=8").Created(1),
			MakeSession("small", "cpu=2").Created(2),
			MakeSession("low", "cpu=1").Created(0).Priority(-1),
		))
		snap.Group.HeadOfLine = hol
		return schedule(t, snap)
	}
	t.Run("skip places what fits", func(t *testing.T) {
		plan := mk(domain.HOLSkip)
		got := placedOn(plan)
		if got["small"] == nil || got["low"] == nil || got["big"] != nil {
			t.Fatalf("placed %v, want small and low", got)
		}
		if b := blockersOf(plan, "big"); len(b) != 1 || b[0].Kind != framework.BlockCapacity {
			t.Fatalf("big blockers %+v, want one capacity blocker", b)
		}
	})
	t.Run("block stops everything behind the head", func(t *testing.T) {
		plan := mk(domain.HOLBlock)
		if len(plan.Placements) != 0 {
			t.Fatalf("placed %v, want nothing", placedOn(plan))
		}
		for _, id := range []string{"small", "low"} {
			b := blockersOf(plan, id)
			want := []framework.Blocker{{Kind: framework.BlockQueuePosition, Scope: "session:big"}}
			if diff := cmp.Diff(want, b); diff != "" {
				t.Fatalf("%s blockers (-want +got):\n%s", id, diff)
			}
		}
	})
}

func TestGroupStateHoldsEverything(t *testing.T) {
	t.Parallel()
	for _, state := range []domain.GroupState{domain.GroupStopped} {
		t.Run(state.String(), func(t *testing.T) {
			snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=4,mem=8g")), Sessions(MakeSession("s", "cpu=1")))
			snap.Group.State = state
			plan := schedule(t, snap)
			want := []framework.Blocker{{Kind: framework.BlockResourceGroupState, Scope: "group:default", Detail: state.String()}}
			if len(plan.Placements) != 0 {
				t.Fatalf("placed %v in a %s group", placedOn(plan), state)
			}
			if diff := cmp.Diff(want, blockersOf(plan, "s")); diff != "" {
				t.Fatalf("blockers (-want +got):\n%s", diff)
			}
			if len(plan.Impossible) != 0 {
				t.Fatalf("group state made sessions impossible: %v", impossible(plan))
			}
		})
	}
}

// A DRAINING group refuses new sessions at the API but schedules its queue
// so it can empty (seed 003), unlike STOPPED above.
func TestDrainingGroupSchedulesItsQueue(t *testing.T) {
	t.Parallel()
	snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=4,mem=8g")), Sessions(MakeSession("s", "cpu=1")))
	snap.Group.State = domain.GroupDraining
	plan := schedule(t, snap)
	if len(plan.Placements) != 1 {
		t.Fatalf("a DRAINING group placed %v; want its one pending session placed", placedOn(plan))
	}
}

func TestCapacityBlockerNumbers(t *testing.T) {
	t.Parallel()
	agents := Agents(
		MakeAgent("a1", "cpu=8,mem=16g").Occupied("cpu=6"),                      // 2 cpu, 16g free
		MakeAgent("a2", "cpu=16,mem=32g").Occupied("mem=30g"),                   // 16 cpu, 2g free
		MakeAgent("a3", "cpu=64,mem=64g").Cordoned(),                            // not eligible
		MakeAgent("a4", "cpu=32,mem=64g").Arch("aarch64"),                       // not eligible
		MakeAgent("a5", "cpu=4,mem=8g,cuda.device=2").Occupied("cuda.device=2"), // 4 cpu, 8g, 0 gpu free
	)
	tests := []struct {
		name string
		req  string
		want []framework.Blocker
	}{
		{
			// Largest free cpu among eligible a1, a2, a5 is 16 (a2); largest
			// total is 16 too — a3 is cordoned and a4 the wrong arch.
			name: "more than any agent has in total",
			req:  "cpu=20",
			want: []framework.Blocker{{Kind: framework.BlockCapacity, Scope: "group:default", Slot: "cpu",
				Requested: q("cpu", "20"), Available: q("cpu", "16"), Capacity: q("cpu", "16")}},
		},
		{
			// Largest free mem is 16g on a1 (a2 has 2g, a5 8g); 20g > 16g.
			name: "memory short everywhere",
			req:  "cpu=1,mem=20g",
			want: []framework.Blocker{{Kind: framework.BlockCapacity, Scope: "group:default", Slot: "mem",
				Requested: q("mem", "20g"), Available: q("mem", "16g"), Capacity: q("mem", "32g")}},
		},
		{
			// 10 cpu is free only on a2 and 10g only on a1: each slot fits
			// somewhere, both together nowhere.
			name: "fragmented",
			req:  "cpu=10,mem=10g",
			want: []framework.Blocker{{Kind: framework.BlockCapacity, Scope: "group:default"}},
		},
		{
			name: "gpus all taken",
			req:  "cpu=1,cuda.device=1",
			want: []framework.Blocker{{Kind: framework.BlockCapacity, Scope: "group:default", Slot: "cuda.device",
				Requested: q("cuda.device", "1"), Available: 0, Capacity: q("cuda.device", "2")}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan := schedule(t, MakeSnapshot(agents, Sessions(MakeSession("s", tc.req))))
			if diff := cmp.Diff(tc.want, blockersOf(plan, "s")); diff != "" {
				t.Fatalf("blockers (-want +got):\n%s", diff)
			}
			if len(plan.Waiting) != 1 {
				t.Fatalf("capacity must leave the session waiting, got waiting=%v impossible=%v", plan.Waiting, plan.Impossible)
			}
		})
	}
	t.Run("exceeds is stated plainly", func(t *testing.T) {
		b := framework.Blocker{Kind: framework.BlockCapacity, Slot: "cpu", Requested: q("cpu", "20"), Capacity: q("cpu", "16")}
		if !b.ExceedsCapacity() {
			t.Fatal("20 cpu against 16 total: ExceedsCapacity false")
		}
		if msg := b.Message(Registry()); msg != "requests 20 cpu, more than any agent has in total (largest: 16): it can never fit the agents "+
			"the group has now; waiting for a larger agent" {
			t.Fatalf("message %q", msg)
		}
	})
}

func TestNoAgentsAndArchitecture(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		agents []domain.Agent
		s      *SessionB
		want   []framework.Blocker
	}{
		{"empty group", nil, MakeSession("s", "cpu=1"),
			[]framework.Blocker{{Kind: framework.BlockNoAgents, Scope: "group:default"}}},
		{"only lost and cordoned agents", Agents(MakeAgent("a1", "cpu=8").Lost(), MakeAgent("a2", "cpu=8").Cordoned()),
			MakeSession("s", "cpu=1"), []framework.Blocker{{Kind: framework.BlockNoAgents, Scope: "group:default"}}},
		{"no agent of the architecture", Agents(MakeAgent("a1", "cpu=8")), MakeSession("s", "cpu=1").Arch("aarch64"),
			[]framework.Blocker{{Kind: framework.BlockArchitecture, Scope: "group:default", Detail: "aarch64"}}},
		{"strict designation of a missing agent", Agents(MakeAgent("a1", "cpu=8")),
			MakeSession("s", "cpu=1").Designated(true, "gone"),
			[]framework.Blocker{{Kind: framework.BlockNoAgents, Scope: "designated", Detail: "[gone]"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan := schedule(t, MakeSnapshot(tc.agents, Sessions(tc.s)))
			if diff := cmp.Diff(tc.want, blockersOf(plan, "s")); diff != "" {
				t.Fatalf("blockers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterSessions(t *testing.T) {
	t.Parallel()
	t.Run("single-node puts every kernel on one agent", func(t *testing.T) {
		// 3 kernels × 2 cpu = 6: only a2 (8 cpu) holds them together.
		plan := schedule(t, MakeSnapshot(
			Agents(MakeAgent("a1", "cpu=4,mem=64g"), MakeAgent("a2", "cpu=8,mem=64g")),
			Sessions(MakeSession("s", "cpu=2").Single(3))))
		if diff := cmp.Diff(map[string][]string{"s": {"a2", "a2", "a2"}}, placedOn(plan)); diff != "" {
			t.Fatalf("placements (-want +got):\n%s", diff)
		}
	})
	t.Run("multi-node spreads kernels where they fit", func(t *testing.T) {
		// 3 kernels × 4 cpu on agents of 4 cpu each: one per agent.
		plan := schedule(t, MakeSnapshot(
			Agents(MakeAgent("a1", "cpu=4,mem=64g"), MakeAgent("a2", "cpu=4,mem=64g"), MakeAgent("a3", "cpu=4,mem=64g")),
			Sessions(MakeSession("s", "cpu=4").Multi(3))))
		if diff := cmp.Diff(map[string][]string{"s": {"a1", "a2", "a3"}}, placedOn(plan)); diff != "" {
			t.Fatalf("placements (-want +got):\n%s", diff)
		}
	})
	t.Run("a gang that does not fit leaves nothing behind", func(t *testing.T) {
		// gang: 3 × 4 cpu but only two agents of 4 → kernel 3 fails, the
		// two tentative kernels are undone, and "after" (4 cpu) still gets
		// an agent of its own, which it could not if the gang had leaked.
		plan := schedule(t, MakeSnapshot(
			Agents(MakeAgent("a1", "cpu=4,mem=64g"), MakeAgent("a2", "cpu=4,mem=64g")),
			Sessions(MakeSession("gang", "cpu=4").Multi(3).Created(1),
				MakeSession("after1", "cpu=4").Created(2), MakeSession("after2", "cpu=4").Created(3))))
		if diff := cmp.Diff(map[string][]string{"after1": {"a1"}, "after2": {"a2"}}, placedOn(plan)); diff != "" {
			t.Fatalf("placements (-want +got):\n%s", diff)
		}
		want := []framework.Blocker{{Kind: framework.BlockGang, Scope: "kernel:3/3", Slot: "cpu",
			Requested: q("cpu", "4"), Available: 0, Capacity: q("cpu", "4")}}
		if diff := cmp.Diff(want, blockersOf(plan, "gang")); diff != "" {
			t.Fatalf("gang blockers (-want +got):\n%s", diff)
		}
	})
}

func TestQuotaAndConcurrencyCountTheRound(t *testing.T) {
	t.Parallel()
	agents := Agents(MakeAgent("a1", "cpu=64,mem=256g"))
	t.Run("user slot limit", func(t *testing.T) {
		// limit 5 cpu, already holding 1: s1 (2) → 3, s2 (2) → 5, s3 (2)
		// would make 7 > 5 → quota blocker, 0 left.
		snap := MakeSnapshot(agents, Sessions(
			MakeSession("s1", "cpu=2").Created(1), MakeSession("s2", "cpu=2").Created(2), MakeSession("s3", "cpu=2").Created(3)))
		limits := domain.Unlimited(Registry().Len())
		limits[0] = q("cpu", "5")
		snap.Policies.Users = map[string]domain.Policy{"u1": {Scope: domain.ScopeUser, Name: "u1", MaxSlots: limits}}
		snap.Usage.Users = map[string]framework.Use{"u1": {Occupied: Slots("cpu=1"), Active: 1}}
		plan := schedule(t, snap)
		if len(plan.Placements) != 2 {
			t.Fatalf("placed %v, want s1 and s2", placedOn(plan))
		}
		want := []framework.Blocker{{Kind: framework.BlockQuota, Scope: "user:u1", Slot: "cpu",
			Requested: q("cpu", "2"), Available: 0, Capacity: q("cpu", "5")}}
		if diff := cmp.Diff(want, blockersOf(plan, "s3")); diff != "" {
			t.Fatalf("blockers (-want +got):\n%s", diff)
		}
	})
	t.Run("project and domain limits name their scope", func(t *testing.T) {
		// project p1 mem limit 10g, domain d1 mem limit 12g; s1 asks 16g.
		// project: 16g > 10g → 10g left; domain: 16g > 12g, 4g held → 8g left.
		snap := MakeSnapshot(agents, Sessions(MakeSession("s1", "cpu=1,mem=16g")))
		pl, dl := domain.Unlimited(Registry().Len()), domain.Unlimited(Registry().Len())
		pl[1], dl[1] = q("mem", "10g"), q("mem", "12g")
		snap.Policies.Projects = map[string]domain.Policy{"p1": {MaxSlots: pl}}
		snap.Policies.Domains = map[string]domain.Policy{"d1": {MaxSlots: dl}}
		snap.Usage.Domains = map[string]framework.Use{"d1": {Occupied: Slots("mem=4g"), Active: 1}}
		plan := schedule(t, snap)
		want := []framework.Blocker{
			{Kind: framework.BlockQuota, Scope: "project:p1", Slot: "mem", Requested: q("mem", "16g"), Available: q("mem", "10g"), Capacity: q("mem", "10g")},
			{Kind: framework.BlockQuota, Scope: "domain:d1", Slot: "mem", Requested: q("mem", "16g"), Available: q("mem", "8g"), Capacity: q("mem", "12g")},
		}
		if diff := cmp.Diff(want, blockersOf(plan, "s1")); diff != "" {
			t.Fatalf("blockers (-want +got):\n%s", diff)
		}
		if len(plan.Impossible) != 0 {
			t.Fatal("a quota must leave the session waiting, not cancel it")
		}
	})
	t.Run("max concurrent sessions", func(t *testing.T) {
		// cap 2 with 1 active: s1 placed (2 active), s2 waits.
		snap := MakeSnapshot(agents, Sessions(MakeSession("s1", "cpu=1").Created(1), MakeSession("s2", "cpu=1").Created(2)))
		snap.Policies.Users = map[string]domain.Policy{"u1": {MaxConcurrentSessions: 2}}
		snap.Usage.Users = map[string]framework.Use{"u1": {Occupied: Slots(""), Active: 1}}
		plan := schedule(t, snap)
		want := []framework.Blocker{{Kind: framework.BlockConcurrency, Scope: "user:u1", Requested: 1, Available: 0, Capacity: 2}}
		if diff := cmp.Diff(want, blockersOf(plan, "s2")); diff != "" {
			t.Fatalf("blockers (-want +got):\n%s", diff)
		}
		if placedOn(plan)["s1"] == nil {
			t.Fatal("s1 not placed")
		}
	})
}

func TestDependenciesStartTimeAndType(t *testing.T) {
	t.Parallel()
	deps := map[domain.SessionID]framework.DependencyState{
		"ok":        {Status: domain.SessionTerminated, Outcome: domain.OutcomeSuccess},
		"running":   {Status: domain.SessionRunning},
		"failed":    {Status: domain.SessionTerminated, Outcome: domain.OutcomeFailure},
		"cancelled": {Status: domain.SessionCancelled, Outcome: domain.OutcomeCancelled},
		"error":     {Status: domain.SessionError},
	}
	tests := []struct {
		name       string
		s          *SessionB
		placed     bool
		impossible bool
		want       []framework.Blocker
	}{
		{"dependency succeeded", MakeSession("s", "cpu=1").DependsOn("ok"), true, false, nil},
		{"dependency still running", MakeSession("s", "cpu=1").DependsOn("ok", "running"), false, false,
			[]framework.Blocker{{Kind: framework.BlockDependency, Scope: "session:running", Detail: "RUNNING"}}},
		{"dependency failed", MakeSession("s", "cpu=1").DependsOn("failed"), false, true,
			[]framework.Blocker{{Kind: framework.BlockDependency, Scope: "session:failed", Detail: "TERMINATED (failure)", Impossible: true}}},
		{"dependency cancelled", MakeSession("s", "cpu=1").DependsOn("cancelled"), false, true,
			[]framework.Blocker{{Kind: framework.BlockDependency, Scope: "session:cancelled", Detail: "CANCELLED (cancelled)", Impossible: true}}},
		{"dependency errored", MakeSession("s", "cpu=1").DependsOn("error"), false, true,
			[]framework.Blocker{{Kind: framework.BlockDependency, Scope: "session:error", Detail: "ERROR", Impossible: true}}},
		{"dependency missing", MakeSession("s", "cpu=1").DependsOn("nope"), false, true,
			[]framework.Blocker{{Kind: framework.BlockDependency, Scope: "session:nope", Detail: "missing", Impossible: true}}},
		{"starts later", MakeSession("s", "cpu=1").Type(domain.TypeBatch).StartsAt(60), false, false,
			[]framework.Blocker{{Kind: framework.BlockStartTime, Scope: "session:s", Detail: "2026-01-01T00:01:00Z"}}},
		{"start time reached", MakeSession("s", "cpu=1").Type(domain.TypeBatch).StartsAt(0), true, false, nil},
		{"type not run by group", MakeSession("s", "cpu=1").Type(domain.TypeInference), false, true,
			[]framework.Blocker{{Kind: framework.BlockSessionType, Scope: "group:default", Detail: "inference", Impossible: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=4,mem=8g")), Sessions(tc.s))
			snap.Dependencies = deps
			snap.Group.AllowedTypes = []domain.SessionType{domain.TypeInteractive, domain.TypeBatch}
			plan := schedule(t, snap)
			if got := len(plan.Placements) == 1; got != tc.placed {
				t.Fatalf("placed = %v, want %v", got, tc.placed)
			}
			if got := len(plan.Impossible) == 1; got != tc.impossible {
				t.Fatalf("impossible = %v, want %v", got, tc.impossible)
			}
			if diff := cmp.Diff(tc.want, blockersOf(plan, "s")); diff != "" {
				t.Fatalf("blockers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDesignatedAvoidedAndKernelCaps(t *testing.T) {
	t.Parallel()
	agents := func() []domain.Agent {
		return Agents(
			MakeAgent("a1", "cpu=8,mem=32g").Occupied("cpu=4"), // most utilised: concentrated's first pick
			MakeAgent("a2", "cpu=8,mem=32g"),
			MakeAgent("a3", "cpu=8,mem=32g").MaxKernels(2, 2),
		)
	}
	tests := []struct {
		name string
		s    *SessionB
		want []string
	}{
		{"concentrated prefers the busier agent", MakeSession("s", "cpu=1"), []string{"a1"}},
		{"preferred designation wins when it fits", MakeSession("s", "cpu=1").Designated(false, "a2"), []string{"a2"}},
		{"preferred designation falls back", MakeSession("s", "cpu=6").Designated(false, "a1"), []string{"a2"}},
		{"avoided agent is tried last", MakeSession("s", "cpu=1").Avoid("a1"), []string{"a2"}},
		{"avoided agent is still used when alone in fitting", MakeSession("s", "cpu=2").Avoid("a1", "a2").Designated(true, "a1"), []string{"a1"}},
		{"kernel cap excludes a full agent", MakeSession("s", "cpu=1").Designated(false, "a3"), []string{"a1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan := schedule(t, MakeSnapshot(agents(), Sessions(tc.s)))
			if diff := cmp.Diff(tc.want, placedOn(plan)["s"]); diff != "" {
				t.Fatalf("agents (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("strict designation waits rather than going elsewhere", func(t *testing.T) {
		plan := schedule(t, MakeSnapshot(agents(), Sessions(MakeSession("s", "cpu=1").Designated(true, "a3"))))
		want := []framework.Blocker{{Kind: framework.BlockCapacity, Scope: "group:default", Slot: framework.KernelsSlot,
			Requested: 1, Available: 0, Capacity: 2}}
		if diff := cmp.Diff(want, blockersOf(plan, "s")); diff != "" {
			t.Fatalf("blockers (-want +got):\n%s", diff)
		}
	})
}

func TestRoundRobinCursorCarriesAcrossRounds(t *testing.T) {
	t.Parallel()
	agents := Agents(MakeAgent("a1", "cpu=8,mem=8g"), MakeAgent("a2", "cpu=8,mem=8g"), MakeAgent("a3", "cpu=8,mem=8g"))
	snap := MakeSnapshot(agents, Sessions(MakeSession("s1", "cpu=1").Created(1), MakeSession("s2", "cpu=1").Created(2)))
	snap.Group.Selector = "round-robin"
	snap.Cursor = "a2"
	plan := schedule(t, snap)
	// After a2 comes a3, then wrap to a1.
	if diff := cmp.Diff(map[string][]string{"s1": {"a3"}, "s2": {"a1"}}, placedOn(plan)); diff != "" {
		t.Fatalf("placements (-want +got):\n%s", diff)
	}
	if plan.Cursor != "a1" {
		t.Fatalf("cursor %q, want a1", plan.Cursor)
	}
}

func TestScheduleRejectsUnknownPlugins(t *testing.T) {
	t.Parallel()
	for _, g := range []domain.ResourceGroup{{Sequencer: "random"}, {Selector: "best"}} {
		snap := MakeSnapshot(nil, nil)
		snap.Group.Sequencer, snap.Group.Selector = g.Sequencer, g.Selector
		if _, err := scheduler.New(scheduler.NewRegistry()).Schedule(snap); err == nil {
			t.Fatalf("group %+v scheduled without error", g)
		}
		if err := scheduler.NewRegistry().CheckGroup(g); err == nil {
			t.Fatalf("CheckGroup(%+v) passed", g)
		}
	}
}

func TestScheduleDoesNotMutateSnapshot(t *testing.T) {
	t.Parallel()
	snap := benchSnapshot(50, 500, "drf")
	before := cloneAgents(snap.Agents)
	schedule(t, snap)
	if diff := cmp.Diff(before, snap.Agents); diff != "" {
		t.Fatalf("agents changed (-before +after):\n%s", diff)
	}
}

func cloneAgents(as []domain.Agent) []domain.Agent {
	out := make([]domain.Agent, len(as))
	for i, a := range as {
		out[i] = a
		out[i].Capacity = a.Capacity.Clone()
		out[i].Occupied = a.Occupied.Clone()
	}
	return out
}
