package scheduler_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

// members returns n one-cpu members of job, named job-0 ….
func members(job string, n int) []*SessionB {
	out := make([]*SessionB, n)
	for i := range out {
		out[i] = MakeSession(fmt.Sprintf("%s-%d", job, i), "cpu=1").Job(job).Created(i)
	}
	return out
}

func TestJobGang(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		agents  []*AgentB
		pending []*SessionB
		jobs    map[domain.JobID]framework.JobInfo
		// placed counts placements per job ("" for sessions of no job).
		placed map[string]int
		// blocker is the gang blocker every unplaced member of "a" carries.
		blocker string
	}{
		{"min 8 with 7 fitting places none and holds nothing",
			[]*AgentB{MakeAgent("a1", "cpu=7,mem=64g")},
			append(members("a", 8), MakeSession("solo", "cpu=7").Created(100)),
			map[domain.JobID]framework.JobInfo{"a": {MinAvailable: 8, Live: 8}},
			// The solo session behind takes all 7 cpu: the gang held none.
			map[string]int{"solo": 1},
			"job:a: only 7 of the 8 members needed fit together; none is placed"},
		{"min reached: exactly the gang starts together",
			[]*AgentB{MakeAgent("a1", "cpu=4,mem=64g"), MakeAgent("a2", "cpu=4,mem=64g")},
			members("a", 8),
			map[domain.JobID]framework.JobInfo{"a": {MinAvailable: 8, Live: 8}},
			map[string]int{"a": 8}, ""},
		{"fewer submitted than min: every member waits",
			[]*AgentB{MakeAgent("a1", "cpu=64,mem=64g")},
			members("a", 3),
			map[domain.JobID]framework.JobInfo{"a": {MinAvailable: 8, Live: 3}},
			map[string]int{}, "job:a: 3 of 8 members submitted"},
		{"two gangs of 6 on room for 10: one runs, the other holds nothing",
			[]*AgentB{MakeAgent("a1", "cpu=10,mem=64g")},
			append(members("a", 6), members("b", 6)...),
			map[domain.JobID]framework.JobInfo{"a": {MinAvailable: 6, Live: 6}, "b": {MinAvailable: 6, Live: 6}},
			map[string]int{"a": 6}, ""},
		{"members beyond min place when they fit; the rest wait",
			[]*AgentB{MakeAgent("a1", "cpu=3,mem=64g")},
			members("a", 5),
			map[domain.JobID]framework.JobInfo{"a": {MinAvailable: 2, Live: 5}},
			map[string]int{"a": 3}, ""},
		{"placed members count toward min",
			[]*AgentB{MakeAgent("a1", "cpu=2,mem=64g")},
			members("a", 3),
			// 5 of min 6 are placed already: any one more completes it.
			map[domain.JobID]framework.JobInfo{"a": {MinAvailable: 6, Live: 8, Placed: 5}},
			map[string]int{"a": 2}, ""},
		{"gang reached: members place one by one",
			[]*AgentB{MakeAgent("a1", "cpu=1,mem=64g")},
			members("a", 2),
			map[domain.JobID]framework.JobInfo{"a": {MinAvailable: 2, Live: 4, Placed: 2}},
			map[string]int{"a": 1}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snap := MakeSnapshot(Agents(tc.agents...), Sessions(tc.pending...))
			snap.Jobs = tc.jobs
			plan := schedule(t, snap)
			got := map[string]int{}
			byID := map[domain.SessionID]domain.JobID{}
			for _, p := range snap.Pending {
				byID[p.Session.ID] = p.Session.Job
			}
			for _, p := range plan.Placements {
				j := string(byID[p.Session])
				if j == "" {
					j = string(p.Session)
				}
				got[j]++
			}
			if diff := cmp.Diff(tc.placed, got); diff != "" {
				t.Fatalf("placements per job (-want +got):\n%s", diff)
			}
			if tc.blocker != "" {
				for _, p := range snap.Pending {
					if p.Session.Job != "a" {
						continue
					}
					bs := blockersOf(plan, string(p.Session.ID))
					if len(bs) == 0 || bs[0].Message(snap.Slots) != tc.blocker {
						t.Fatalf("%s blockers %+v; want first %q", p.Session.ID, bs, tc.blocker)
					}
				}
			}
			if n := len(plan.Placements) + len(plan.Waiting) + len(plan.Impossible); n != len(snap.Pending) {
				t.Fatalf("%d decisions for %d sessions", n, len(snap.Pending))
			}
		})
	}
}

// Gangs across sessions are whole or absent: in every round a job either
// places nothing or ends with at least min-available members placed, and
// the plan stays valid (capacity, quotas, one decision per session).
func TestJobGangsWholeOrAbsent(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		snap := genSnapshot(t)
		nJobs := rapid.IntRange(1, 3).Draw(t, "jobs")
		count := map[domain.JobID]int{}
		for i := range snap.Pending {
			if j := rapid.IntRange(-1, nJobs-1).Draw(t, "job"); j >= 0 {
				id := domain.JobID(fmt.Sprintf("j%d", j))
				snap.Pending[i].Session.Job = id
				count[id]++
			}
		}
		snap.Jobs = map[domain.JobID]framework.JobInfo{}
		// In id order: drawn in map order, a case could not be replayed.
		for _, id := range slices.Sorted(maps.Keys(count)) {
			n := count[id]
			extra := rapid.IntRange(0, 2).Draw(t, "extra")
			placed := rapid.IntRange(0, extra).Draw(t, "placed")
			snap.Jobs[id] = framework.JobInfo{MinAvailable: rapid.IntRange(1, n+extra+1).Draw(t, "min"),
				Live: n + extra, Placed: placed}
		}
		plan, err := scheduler.New(scheduler.NewRegistry()).Schedule(snap)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, snap, plan)
		job := map[domain.SessionID]domain.JobID{}
		for _, p := range snap.Pending {
			job[p.Session.ID] = p.Session.Job
		}
		got := map[domain.JobID]int{}
		for _, p := range plan.Placements {
			if j := job[p.Session]; j != "" {
				got[j]++
			}
		}
		for id, n := range got {
			info := snap.Jobs[id]
			if info.Placed < info.MinAvailable && info.Placed+n < info.MinAvailable {
				t.Fatalf("job %s: %d placed this round + %d before < min %d: a partial gang leaked", id, n, info.Placed, info.MinAvailable)
			}
		}
	})
}

// A gang short of members says so in numbers, under the members pseudo
// slot, so a client tells its submitter to submit them rather than to
// wait for resources; and it never reads as too large for the agents.
func TestGangShortOfMembersBlocker(t *testing.T) {
	t.Parallel()
	snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=64,mem=64g")), Sessions(members("a", 1)...))
	snap.Jobs = map[domain.JobID]framework.JobInfo{"a": {MinAvailable: 3, Live: 1}}
	plan := schedule(t, snap)
	bs := blockersOf(plan, string(snap.Pending[0].Session.ID))
	if len(bs) == 0 {
		t.Fatal("no blockers")
	}
	want := framework.Blocker{Kind: framework.BlockGang, Scope: "job:a", Slot: framework.MembersSlot, Requested: 3,
		Available: 1, Detail: "1 of 3 members submitted"}
	if diff := cmp.Diff(want, bs[0]); diff != "" {
		t.Errorf("first blocker (-want +got):\n%s", diff)
	}
	if bs[0].ExceedsCapacity() {
		t.Error("a gang short of members reads as exceeding capacity")
	}
}

// A multi-node gang that fails after an earlier gang's rollback must not
// leave behind the miss it found while its first kernel held the only
// GPU: the session after it, which fits that GPU, is placed. (Found by
// TestJobGangsWholeOrAbsent: the gang's miss count was taken before the
// rollback's stale misses were dropped, and the truncation re-extended
// the slice over them.)
func TestGangRollbackKeepsNoStaleMiss(t *testing.T) {
	t.Parallel()
	snap := MakeSnapshot(Agents(MakeAgent("a0", "cpu=8,mem=8g,cuda.device=1"), MakeAgent("a1", "cpu=8,mem=8g")),
		Sessions(
			// A miss recorded before any rollback: two GPUs fit nowhere.
			MakeSession("big", "cpu=1,mem=1g,cuda.device=2").Created(0),
			// A job of two one-GPU members: one fits, so its gang rolls
			// back (Release), starting a new miss generation.
			MakeSession("j-0", "cpu=1,mem=1g,cuda.device=1").Job("j").Created(1),
			MakeSession("j-1", "cpu=1,mem=1g,cuda.device=1").Job("j").Created(2),
			// Kernel 1 takes the GPU, kernel 2 misses and the gang unreserves.
			MakeSession("multi", "cpu=1,mem=1g,cuda.device=1").Multi(2).Created(3),
			MakeSession("fits", "cpu=1,mem=1g,cuda.device=1").Created(4),
		))
	snap.Jobs = map[domain.JobID]framework.JobInfo{"j": {MinAvailable: 2, Live: 2}}
	plan, err := scheduler.New(scheduler.NewRegistry()).Schedule(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Placements) != 1 || plan.Placements[0].Session != "fits" || plan.Placements[0].Kernels[0].Agent != "a0" {
		t.Fatalf("placements %+v; want only fits on a0; waiting %+v", plan.Placements, plan.Waiting)
	}
}
