package scheduler_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/scheduler"
)

// TestIndexedPlanMatchesFullScan holds the round's agent index to the plain
// scans it replaces: for any snapshot — gangs, designated and avoided
// agents, two architectures, kernel caps, cordoned and lost agents, twins
// that tie, every selector and sequencer — the plan is the same, blockers
// and round-robin cursor included. Groups run to a few dozen agents and
// over a hundred sessions so they fill up and the index's pruning and
// re-ranking are exercised, not just its first answer.
func TestIndexedPlanMatchesFullScan(t *testing.T) {
	t.Parallel()
	indexed := scheduler.New(scheduler.NewRegistry())
	scan := scheduler.New(scheduler.ScanRegistry())
	// Ten times rapid's default number of cases: a stale answer shows only
	// when a size recurs after an agent it could use changed rank.
	for range 10 {
		rapid.Check(t, samePlan(indexed, scan))
	}
}

func samePlan(indexed, scan *scheduler.Scheduler) func(*rapid.T) {
	return func(t *rapid.T) {
		snap := genSnapshotSized(t, 48, 120)
		want, err := scan.Schedule(snap)
		if err != nil {
			t.Fatalf("Schedule (scan): %v", err)
		}
		got, err := indexed.Schedule(snap)
		if err != nil {
			t.Fatalf("Schedule (indexed): %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("indexed plan differs from the full scan's (-scan +indexed):\n%s", diff)
		}
	}
}
