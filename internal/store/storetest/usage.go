package storetest

import (
	"math"

	"github.com/google/go-cmp/cmp"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

func (f *fixture) rollup(sec int) store.RollupResult {
	f.t.Helper()
	res, err := f.s.RollupUsage(f.ctx, at(sec))
	f.must(err, "roll up usage at %ds", sec)
	return res
}

// placeAt schedules the session on the agent at the given time.
func (f *fixture) placeAt(sec int, group string, s store.SessionWithKernels, agent domain.AgentID) {
	f.t.Helper()
	res, err := f.s.ApplyPlan(f.ctx, framework.Plan{Group: group, Placements: []framework.Placement{placement(s, agent)}}, at(sec))
	f.must(err, "apply plan")
	if len(res.Applied) != 1 {
		f.t.Fatalf("placing %s: rejected %+v", s.Session.ID, res.Rejected)
	}
}

// endKernel ends a SCHEDULED kernel at the given time, releasing its slots.
func (f *fixture) endKernel(sec int, k domain.KernelID) {
	f.t.Helper()
	_, err := f.s.UpdateKernel(f.ctx, store.KernelUpdate{Kernel: k, From: []domain.KernelStatus{domain.KernelScheduled},
		To: domain.KernelTerminated, Now: at(sec)})
	f.must(err, "end kernel %s", k)
}

// usageTotals sums the history per key and slot over every hour.
func (f *fixture) usageTotals(filter store.UsageFilter) map[string]float64 {
	f.t.Helper()
	rows, err := f.s.UsageHistory(f.ctx, filter)
	f.must(err, "usage history")
	out := map[string]float64{}
	for _, r := range rows {
		out[r.Key+"/"+r.Slot] += r.Amount
	}
	return out
}

func wantUsage(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-6*math.Max(1, w) {
			t.Errorf("%s: %s = %v, want %v", what, k, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected %s = %v", what, k, g)
		}
	}
}

// testUsageRollup: holds are credited from the time a kernel starts
// holding to the time it stops, split at the hours, once, however many
// passes run; the history reads by user, project and group.
func testUsageRollup(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.agent("a1", "g1", []string{"cpu", "8", "mem", "16g"})
	if res := f.rollup(0); res.Opened != 0 {
		t.Fatalf("first pass on an empty cluster opened %d holds", res.Opened)
	}
	s1 := f.session("s1", "g1", "alice", 1, []string{"cpu", "2", "mem", "1g"})
	s2 := f.session("s2", "g1", "bob", 1, []string{"cpu", "1", "mem", "1g"})
	f.placeAt(10, "g1", s1, "a1")
	// Pass 1 at 1800 s: s1 has held since 10 s.
	if res := f.rollup(1800); res.Opened != 1 || res.Closed != 0 {
		t.Errorf("pass 1: %+v, want 1 opened", res)
	}
	f.placeAt(2000, "g1", s2, "a1")
	f.endKernel(3610, s1.Kernels[0].ID)
	// Pass 2 at 7200 s: s1 closes at 3610 s (held 3600 s in all); s2
	// opened at 2000 s and is still open (5200 s).
	if res := f.rollup(7200); res.Opened != 1 || res.Closed != 1 {
		t.Errorf("pass 2: %+v, want 1 opened and 1 closed", res)
	}
	gib := float64(1 << 30)
	want := map[string]float64{
		"alice/cpu": 2000 * 3600, "alice/mem": gib * 3600,
		"bob/cpu": 1000 * 5200, "bob/mem": gib * 5200,
	}
	wantUsage(t, "by user", f.usageTotals(store.UsageFilter{}), want)
	// Passes at or before the last one credit nothing more.
	f.rollup(7200)
	f.rollup(7000)
	wantUsage(t, "after repeated passes", f.usageTotals(store.UsageFilter{}), want)
	// Pass 3 at 9000 s: bob 1800 s more.
	f.rollup(9000)
	want["bob/cpu"], want["bob/mem"] = 1000*7000, gib*7000
	wantUsage(t, "pass 3", f.usageTotals(store.UsageFilter{}), want)
	wantUsage(t, "by project, cpu only", f.usageTotals(store.UsageFilter{By: store.UsageByProject, Slot: "cpu"}),
		map[string]float64{"p-alice/cpu": 2000 * 3600, "p-bob/cpu": 1000 * 7000})
	wantUsage(t, "by group, alice only", f.usageTotals(store.UsageFilter{By: store.UsageByGroup, User: "alice"}),
		map[string]float64{"g1/cpu": 2000 * 3600, "g1/mem": gib * 3600})

	// Hours: base is 09:30:00.123456, so s1's 10 s … 3610 s spans the
	// hours of 09:00 and 10:00.
	rows, err := f.s.UsageHistory(f.ctx, store.UsageFilter{User: "alice", Slot: "cpu"})
	f.must(err, "alice's hours")
	nine := base.Truncate(time.Hour)
	if len(rows) != 2 || !rows[0].Hour.Equal(nine) || !rows[1].Hour.Equal(nine.Add(time.Hour)) {
		t.Fatalf("alice's cpu hours: %+v", rows)
	}
	first := base.Truncate(time.Hour).Add(time.Hour).Sub(at(10)).Seconds() * 2000
	if math.Abs(rows[0].Amount-first) > 1e-3 {
		t.Errorf("09:00 amount %v, want %v", rows[0].Amount, first)
	}
	// A range that leaves out the 09:00 hour.
	late := f.usageTotals(store.UsageFilter{Since: nine.Add(time.Hour), User: "alice", Slot: "cpu"})
	wantUsage(t, "since 10:00", late, map[string]float64{"alice/cpu": 2000*3600 - first})

	n, err := f.s.PruneUsage(f.ctx, nine.Add(time.Hour))
	f.must(err, "prune usage")
	if n != 2 {
		t.Errorf("pruned %d rows, want 2 (alice's cpu and mem at 09:00; bob started at 10:03)", n)
	}
	wantUsage(t, "after pruning", f.usageTotals(store.UsageFilter{User: "alice", Slot: "cpu"}),
		map[string]float64{"alice/cpu": 2000*3600 - first})
	_, err = f.s.UsageHistory(f.ctx, store.UsageFilter{By: "nope"})
	wantErr(t, err, store.ErrInvalid, "usage by nope")
}

// testUsageRollupStartsFromNow: the first pass ever charges kernels
// already holding slots from that pass on, not from when they started.
func testUsageRollupStartsFromNow(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.agent("a1", "g1", []string{"cpu", "8"})
	s1 := f.session("s1", "g1", "alice", 2, []string{"cpu", "1"})
	f.placeAt(10, "g1", s1, "a1")
	if res := f.rollup(100); res.Opened != 2 {
		t.Errorf("first pass opened %d holds, want 2 (both kernels)", res.Opened)
	}
	f.endKernel(400, s1.Kernels[0].ID)
	f.rollup(1000)
	// Kernel 0: 100 … 400 s; kernel 1: 100 … 1000 s; 1 cpu each.
	wantUsage(t, "alice", f.usageTotals(store.UsageFilter{}), map[string]float64{"alice/cpu": 1000 * (300 + 900)})
}

// testUsageRollupStartRace: on PostgreSQL a kernel can start between the
// feed's head and the read of the holding kernels in the first pass, so
// that pass opens its hold and the next one reads its start change too.
// Winding the watermark back to before that change stands for it. The
// second start is a duplicate: the hold already runs, and the pass neither
// fails on the open hold's row nor credits the span twice.
func testUsageRollupStartRace(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.agent("a1", "g1", []string{"cpu", "8"})
	s1 := f.session("s1", "g1", "alice", 1, []string{"cpu", "1"})
	f.placeAt(10, "g1", s1, "a1")
	if res := f.rollup(100); res.Opened != 1 {
		t.Fatalf("first pass opened %d holds, want 1", res.Opened)
	}
	f.e.Exec(t, f.db, "UPDATE usage_watermark SET pos = 0")
	if res := f.rollup(400); res.Opened != 0 {
		t.Errorf("second pass opened %d holds, want 0 (the kernel's hold is open)", res.Opened)
	}
	f.endKernel(700, s1.Kernels[0].ID)
	f.rollup(1000)
	wantUsage(t, "alice", f.usageTotals(store.UsageFilter{}), map[string]float64{"alice/cpu": 1000 * 600})
}

// testUsageRollupOutlivesPrune: a prune of the feed keeps the changes the
// rollup has not read yet (a pass that failed is retried by the next
// sweep), so a kernel's end is still read after the prune, and its hold
// is not credited on for ever.
func testUsageRollupOutlivesPrune(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.agent("a1", "g1", []string{"cpu", "8"})
	s1 := f.session("s1", "g1", "alice", 1, []string{"cpu", "1"})
	f.placeAt(10, "g1", s1, "a1")
	f.rollup(100)
	f.endKernel(200, s1.Kernels[0].ID)
	f.session("s2", "g1", "bob", 1, []string{"cpu", "1"}) // the end is not the feed's last change
	_, err := f.s.PruneChanges(f.ctx, at(1<<30))
	f.must(err, "prune changes")
	if res := f.rollup(1000); res.Closed != 1 {
		t.Errorf("pass after the prune closed %d holds, want 1", res.Closed)
	}
	wantUsage(t, "alice", f.usageTotals(store.UsageFilter{}), map[string]float64{"alice/cpu": 1000 * 100})
}

// testFairShareSnapshot: a fairshare group's settings read back, and its
// snapshot carries the history decayed to the round's time, per project
// and user: 2^(-age/half-life) from the middle of each hour.
func testFairShareSnapshot(t *testing.T, e Engine) {
	f := newFixture(t, e)
	fs := domain.FairShare{HalfLife: time.Hour, Shares: map[string]float64{"user:alice": 2, "project:p-bob": 0.5}}
	f.group("g1", func(g *domain.ResourceGroup) { g.Sequencer, g.FairShare = domain.FairShareSequencer, fs })
	f.group("plain")
	g, err := f.s.GetResourceGroup(f.ctx, "g1")
	f.must(err, "get g1")
	if d := cmp.Diff(fs, g.FairShare); d != "" {
		t.Errorf("fair share settings (-want +got):\n%s", d)
	}
	f.agent("a1", "g1", []string{"cpu", "8"})
	t0 := base.Truncate(time.Hour).Add(time.Hour) // 10:00
	_, err = f.s.RollupUsage(f.ctx, t0.Add(-time.Minute))
	f.must(err, "first pass")
	s1 := f.session("s1", "g1", "alice", 1, []string{"cpu", "1"})
	f.session("s2", "g1", "bob", 1, []string{"cpu", "1"})
	res, err := f.s.ApplyPlan(f.ctx, framework.Plan{Group: "g1", Placements: []framework.Placement{placement(s1, "a1")}}, t0)
	f.must(err, "place s1")
	if len(res.Applied) != 1 {
		t.Fatalf("s1 not placed: %+v", res)
	}
	_, err = f.s.UpdateKernel(f.ctx, store.KernelUpdate{Kernel: s1.Kernels[0].ID, From: []domain.KernelStatus{domain.KernelScheduled},
		To: domain.KernelTerminated, Now: t0.Add(time.Hour)})
	f.must(err, "end s1")
	_, err = f.s.RollupUsage(f.ctx, t0.Add(2*time.Hour))
	f.must(err, "second pass")
	cpu, _ := f.reg.Lookup("cpu")
	for _, c := range []struct {
		now  time.Duration
		want float64
	}{
		// 1 cpu (1000) for the hour 10:00 = 3.6e6; its middle is 10:30.
		{2*time.Hour + 30*time.Minute, 3.6e6 / 4}, // 12:30: two half-lives
		{time.Hour + 30*time.Minute, 3.6e6 / 2},   // 11:30: one
		{20 * time.Minute, 3.6e6},                 // the hour is not over: weight 1
	} {
		snap, err := f.s.LoadSnapshot(f.ctx, "g1", t0.Add(c.now))
		f.must(err, "snapshot")
		if len(snap.Decayed) != 1 || snap.Decayed[0].User != "alice" || snap.Decayed[0].Project != "p-alice" {
			t.Fatalf("at +%v decayed %+v, want alice's only", c.now, snap.Decayed)
		}
		if got := snap.Decayed[0].Slots[cpu]; math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("at +%v alice's decayed cpu = %v, want %v", c.now, got, c.want)
		}
	}
	// Another sequencer's snapshot reads no history.
	snap, err := f.s.LoadSnapshot(f.ctx, "plain", t0)
	f.must(err, "snapshot of plain")
	if snap.Decayed != nil {
		t.Errorf("a fifo group's snapshot carries history: %+v", snap.Decayed)
	}
}

// testUsageRollupConcurrent: passes from two managers at once, at the same
// time and at others, credit every span once: the watermark's row lock
// puts them in turn, and the later one at a time already covered credits
// nothing.
func testUsageRollupConcurrent(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.agent("a1", "g1", []string{"cpu", "8"})
	f.rollup(0)
	s1 := f.session("s1", "g1", "alice", 1, []string{"cpu", "1"})
	f.placeAt(10, "g1", s1, "a1")
	stores := []store.Store{f.s, f.open(Options{Registry: f.reg})}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			// Eight passes at 1000 s, the rest spread up to 2000 s.
			sec := 1000 + (i%2)*(i*100)
			_, err := stores[i%2].RollupUsage(f.ctx, at(min(sec, 2000)))
			errs <- err
		}()
	}
	for range 16 {
		f.must(<-errs, "concurrent pass")
	}
	f.rollup(2000)
	wantUsage(t, "alice after concurrent passes", f.usageTotals(store.UsageFilter{}),
		map[string]float64{"alice/cpu": 1000 * 1990})
}
