package storetest

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// decayWorld is the fair-share cache test's: a fairshare group on one
// database, two store instances whose decayed-usage reads are counted,
// and the uncached reader they are held to.
type decayWorld struct {
	f       *fixture
	fresh   uncachedLoader
	stores  []store.Store
	rebases []*atomic.Int64
}

// testDecayedUsageCache: a fairshare group's decayed usage, as each of two
// store instances loads it through its cache, equals the full read after
// every rollup — passes run by either instance, at advancing times, over
// kernels of two users holding cpu and mem across hour boundaries — and
// after the half-life changes, a pass credits an hour already final (a
// hold stamped before the previous pass), old hours are pruned, and a
// load comes with an earlier now. A load with the watermark where it was
// is answered from the cache without reading the history whole, and so
// are most loads after a pass.
func testDecayedUsageCache(t *testing.T, e Engine) {
	f := newFixture(t, e)
	fresh, ok := f.s.(uncachedLoader)
	if !ok {
		t.Skip("the store reads snapshots without a cache")
	}
	w := &decayWorld{f: f, fresh: fresh}
	for range 2 {
		n := &atomic.Int64{}
		w.rebases = append(w.rebases, n)
		w.stores = append(w.stores, f.open(Options{Registry: f.reg, Fault: func(point string) error {
			if point == store.FaultDecayRebase {
				n.Add(1)
			}
			return nil
		}}))
	}
	fs := func(half time.Duration) func(*domain.ResourceGroup) {
		return func(g *domain.ResourceGroup) {
			g.Sequencer, g.FairShare = domain.FairShareSequencer, domain.FairShare{HalfLife: half}
		}
	}
	f.group("fs", fs(20*time.Minute))
	f.agent("a1", "fs", []string{"cpu", "16", "mem", "64g"})
	f.rollup(0)
	type hold struct {
		id         string
		user       string
		start, end int // seconds; end 0: still holding
		request    []string
	}
	holds := []hold{
		// erin's only hour leaves the horizon (10 h at a 20-minute
		// half-life) before anything rebuilds the caches.
		{"s0", "erin", 300, 900, []string{"cpu", "1"}},
		{"s1", "alice", 200, 3*3600 + 100, []string{"cpu", "2", "mem", "4g"}},
		{"s2", "bob", 1800, 0, []string{"cpu", "1", "mem", "1g"}},
		{"s3", "alice", 5 * 3600, 9*3600 + 1234, []string{"cpu", "4"}},
		{"s4", "bob", 10 * 3600, 10*3600 + 900, []string{"mem", "8g"}},
		{"s5", "carol", 11*3600 + 60, 0, []string{"cpu", "1", "mem", "2g"}},
	}
	sessions := map[string]store.SessionWithKernels{}
	for _, h := range holds {
		sessions[h.id] = f.session(h.id, "fs", h.user, 1, h.request)
	}
	forced := 2 // the first load of each instance
	step := 0
	for sec := 1500; sec <= 14*3600; sec += 1500 {
		step++
		for _, h := range holds {
			if h.start <= sec && h.start > sec-1500 {
				f.placeAt(h.start, "fs", sessions[h.id], "a1")
			}
			if h.end != 0 && h.end <= sec && h.end > sec-1500 {
				f.endKernel(h.end, sessions[h.id].Kernels[0].ID)
			}
		}
		switch step {
		case 12:
			f.group("fs", fs(45*time.Minute))
			forced += 2
		case 16:
			f.group("fs", fs(20*time.Minute))
			forced += 2
		case 28:
			n, err := f.s.PruneUsage(f.ctx, at(sec).Truncate(time.Hour).Add(-4*time.Hour))
			f.must(err, "prune usage")
			if n == 0 {
				t.Fatalf("step %d: the prune deleted no hour the cache holds", step)
			}
			forced += 2
		}
		_, err := w.stores[step%3%2].RollupUsage(f.ctx, at(sec))
		f.must(err, "roll up at %ds", sec)
		w.check(fmt.Sprintf("step %d, rolled up at %ds", step, sec), at(sec+1))
		if step == 25 {
			// A hold stamped before the hour of the pass just run: the
			// next pass credits that hour, which the caches took as
			// final.
			s := f.session("late", "fs", "dave", 1, []string{"cpu", "3"})
			stamp := at(sec).Truncate(time.Hour).Add(-20 * time.Minute)
			res, err := f.s.ApplyPlan(f.ctx, framework.Plan{Group: "fs", Placements: []framework.Placement{placement(s, "a1")}}, stamp)
			f.must(err, "place late")
			if len(res.Applied) != 1 {
				t.Fatalf("late not placed: %+v", res.Rejected)
			}
			forced += 2
		}
		// The watermark where it was: each instance's cache answers.
		before := []int64{w.rebases[0].Load(), w.rebases[1].Load()}
		w.check(fmt.Sprintf("step %d, a minute later", step), at(sec+61))
		for i := range w.stores {
			if n := w.rebases[i].Load(); n != before[i] {
				t.Errorf("step %d: store %d read the history whole with the watermark unmoved", step, i)
			}
		}
		if step == 23 {
			// The hour of 09:00, which had just left the horizon, is in
			// it again.
			w.check(fmt.Sprintf("step %d, 25 minutes earlier", step), at(sec-1500))
		}
	}
	t.Logf("%d steps; the history read whole %d and %d times (%d forced)", step, w.rebases[0].Load(), w.rebases[1].Load(), forced)
	// Every other load (two per step and instance) was brought forward:
	// the rest are the forced reads, and one every 32 half-lives.
	if n := w.rebases[0].Load() + w.rebases[1].Load(); n > int64(forced)+4 {
		t.Errorf("the history was read whole %d times in %d steps; want at most %d", n, step, forced+4)
	}
}

// check fails the test where an instance's decayed usage of "fs" at now
// is not the full read's.
func (w *decayWorld) check(when string, now time.Time) {
	f := w.f
	f.t.Helper()
	want, err := w.fresh.LoadSnapshotUncached(f.ctx, "fs", now)
	f.must(err, "uncached snapshot")
	if len(want.Decayed) == 0 {
		f.t.Fatalf("%s: no decayed usage to compare", when)
	}
	for i, s := range w.stores {
		got, err := s.LoadSnapshot(f.ctx, "fs", now)
		f.must(err, "snapshot of store %d", i)
		sameDecayed(f.t, fmt.Sprintf("%s, store %d", when, i), f.reg, got.Decayed, want.Decayed)
	}
}

// sameDecayed compares two decayed usages by project, user and slot, to a
// relative 1e-9: the cache sums in another order than the database.
func sameDecayed(t *testing.T, what string, reg *domain.Registry, got, want []framework.DecayedUsage) {
	t.Helper()
	flat := func(ds []framework.DecayedUsage) map[string]float64 {
		out := map[string]float64{}
		for _, d := range ds {
			key := d.Project + "/" + d.User
			if _, dup := out[key]; dup {
				t.Errorf("%s: %s twice", what, key)
			}
			out[key] = 0
			for id, v := range d.Slots {
				if v != 0 {
					out[key+"/"+reg.Type(domain.SlotID(id)).Name] = v
				}
			}
		}
		return out
	}
	g, w := flat(got), flat(want)
	for k, wv := range w {
		gv, ok := g[k]
		if !ok || math.Abs(gv-wv) > 1e-9*math.Abs(wv) {
			t.Errorf("%s: %s = %v, want %v", what, k, gv, wv)
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("%s: unexpected %s = %v", what, k, gv)
		}
	}
}
