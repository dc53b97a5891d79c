package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

const gib = float64(1 << 30)

// utilisationFixture is two groups with agents, one of them LOST, one
// session holding 1 cpu and 1 GiB on g1, and an empty group.
func utilisationFixture(t *testing.T, e Engine) *fixture {
	t.Helper()
	f := newFixture(t, e)
	f.group("g1")
	f.group("g2")
	f.group("empty")
	f.agent("a1", "g1", []string{"cpu", "4", "mem", "8g"})
	f.agent("a2", "g1", []string{"cpu", "2", "mem", "4g"})
	f.agent("lost", "g1", []string{"cpu", "8", "mem", "16g"})
	f.must(f.s.SetAgentStatus(f.ctx, "lost", domain.AgentLost), "lose agent")
	f.agent("b1", "g2", []string{"cpu", "1"})
	s := f.session("s1", "g1", "alice", 1, []string{"cpu", "1", "mem", "1g"})
	f.schedule("g1", s, "a1")
	return f
}

func (f *fixture) record(seconds ...int) {
	f.t.Helper()
	for _, sec := range seconds {
		f.must(f.s.RecordUtilisation(f.ctx, at(sec)), "record at %ds", sec)
	}
}

func (f *fixture) utilisation(group string, from, to int, step time.Duration) []store.UtilisationPoint {
	f.t.Helper()
	got, err := f.s.Utilisation(f.ctx, group, at(from), at(to), step)
	f.must(err, "utilisation of %s", group)
	return got
}

func point(sec int, slot string, capacity, occupied float64, samples int) store.UtilisationPoint {
	return store.UtilisationPoint{At: at(sec), Slot: slot, Capacity: capacity, Occupied: occupied, Samples: samples}
}

func diffPoints(t *testing.T, what string, got, want []store.UtilisationPoint) {
	t.Helper()
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func testUtilisationSampling(t *testing.T, e Engine) {
	f := utilisationFixture(t, e)
	f.record(0, 10)
	// Only a1 and a2 count: cpu 4+2 cores = 6000 thousandths, mem 8+4 GiB;
	// the LOST agent's 8 cores are left out.
	diffPoints(t, "g1 at 10s steps", f.utilisation("g1", 0, 20, 10*time.Second), []store.UtilisationPoint{
		point(0, "cpu", 6000, 1000, 1), point(0, "mem", 12*gib, gib, 1),
		point(10, "cpu", 6000, 1000, 1), point(10, "mem", 12*gib, gib, 1),
	})
	diffPoints(t, "g2", f.utilisation("g2", 0, 20, 10*time.Second), []store.UtilisationPoint{
		point(0, "cpu", 1000, 0, 1), point(10, "cpu", 1000, 0, 1),
	})

	// A second sample at the same time replaces the first.
	f.must(f.s.SetAgentStatus(f.ctx, "a2", domain.AgentLost), "lose a2")
	f.record(10)
	diffPoints(t, "g1 resampled at 10s", f.utilisation("g1", 10, 20, 10*time.Second), []store.UtilisationPoint{
		point(10, "cpu", 4000, 1000, 1), point(10, "mem", 8*gib, gib, 1),
	})

	// A group without agents, and one that does not exist, have no samples.
	for _, g := range []string{"empty", "nope"} {
		if got := f.utilisation(g, 0, 20, 10*time.Second); len(got) != 0 {
			t.Errorf("utilisation of %s: got %+v, want none", g, got)
		}
	}
}

func testUtilisationRange(t *testing.T, e Engine) {
	f := utilisationFixture(t, e)
	f.record(0, 10, 20, 30, 40, 50)
	// [10s, 30s): the samples at 10 and 20; from is counted inclusive, to
	// exclusive.
	got := f.utilisation("g2", 10, 30, 10*time.Second)
	diffPoints(t, "g2 in [10s, 30s)", got, []store.UtilisationPoint{
		point(10, "cpu", 1000, 0, 1), point(20, "cpu", 1000, 0, 1),
	})
	if got := f.utilisation("g2", 30, 30, 10*time.Second); len(got) != 0 {
		t.Errorf("empty range: got %+v", got)
	}
	if got := f.utilisation("g2", 40, 20, 10*time.Second); len(got) != 0 {
		t.Errorf("reversed range: got %+v", got)
	}
	_, err := f.s.Utilisation(f.ctx, "g2", at(0), at(60), 0)
	wantErr(t, err, store.ErrInvalid, "zero step")
}

func testUtilisationDownsampling(t *testing.T, e Engine) {
	f := utilisationFixture(t, e)
	f.record(0, 10, 20)
	// From 30s on a second session holds 2 more cores on a2.
	s := f.session("s2", "g1", "bob", 1, []string{"cpu", "2"})
	f.schedule("g1", s, "a2")
	f.record(30, 40, 50, 60)
	// 30s steps: [0, 30) averages 1000 three times; [30, 60) 3000 three
	// times; [60, 90) has one sample.
	got := f.utilisation("g1", 0, 90, 30*time.Second)
	diffPoints(t, "g1 at 30s steps", got, []store.UtilisationPoint{
		point(0, "cpu", 6000, 1000, 3), point(0, "mem", 12*gib, gib, 3),
		point(30, "cpu", 6000, 3000, 3), point(30, "mem", 12*gib, gib, 3),
		point(60, "cpu", 6000, 3000, 1), point(60, "mem", 12*gib, gib, 1),
	})
	// Steps are counted from from, not from the epoch: from 20s, the
	// first 20s step holds the samples at 20 and 30, averaging
	// (1000+3000)/2.
	got = f.utilisation("g1", 20, 60, 20*time.Second)
	diffPoints(t, "g1 at 20s steps from 20s", got, []store.UtilisationPoint{
		point(20, "cpu", 6000, 2000, 2), point(20, "mem", 12*gib, gib, 2),
		point(40, "cpu", 6000, 3000, 2), point(40, "mem", 12*gib, gib, 2),
	})
}

func testPruneUtilisation(t *testing.T, e Engine) {
	f := utilisationFixture(t, e)
	f.record(0, 10, 20, 30)
	// Samples at 0 and 10: two slots in g1 and one in g2 each.
	n, err := f.s.PruneUtilisation(f.ctx, at(15))
	f.must(err, "prune")
	if n != 6 {
		t.Errorf("pruned %d samples, want 6", n)
	}
	diffPoints(t, "g2 after pruning", f.utilisation("g2", 0, 40, 10*time.Second), []store.UtilisationPoint{
		point(20, "cpu", 1000, 0, 1), point(30, "cpu", 1000, 0, 1),
	})
	if n, err := f.s.PruneUtilisation(f.ctx, at(15)); err != nil || n != 0 {
		t.Errorf("prune again: %d, %v; want 0, nil", n, err)
	}
}

// testHeldByUser: the per-user sums count exactly the kernels that hold
// resources, in every group, and nothing pending or ended.
func testHeldByUser(t *testing.T, e Engine) {
	f := utilisationFixture(t, e) // alice holds 1 cpu, 1 GiB on a1 (g1)
	// A 2-kernel session of alice's on g1 and one of bob's on g2, placed.
	gang := f.session("s2", "g1", "alice", 2, []string{"cpu", "0.5", "mem", "2g"})
	f.schedule("g1", gang, "a1", "a2")
	b := f.session("s3", "g2", "bob", 1, []string{"cpu", "1"})
	f.schedule("g2", b, "b1")
	// Pending, and ended, sessions hold nothing.
	f.session("s4", "g1", "alice", 1, []string{"cpu", "3"})
	ended := f.session("s5", "g1", "carol", 1, []string{"cpu", "1"})
	f.schedule("g1", ended, "a2")
	f.advance(ended.Session.ID, domain.SessionTerminating)
	_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{ended.Session.ID}, []domain.SessionStatus{domain.SessionTerminating},
		domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}, "", at(30))
	f.must(err, "end s5")

	got, err := f.s.HeldByUser(f.ctx)
	f.must(err, "held by user")
	want := map[string]domain.Vec{
		"alice": f.slots("cpu", "2", "mem", "5g"), // 1 + 2×0.5 cpu; 1 + 2×2 GiB
		"bob":   f.slots("cpu", "1"),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("held by user (-want +got):\n%s", d)
	}
	f.invariant()
}
