package storetest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// The fair-share benchmark's history: BenchUsageDays days of hourly rows
// for BenchUsageUsers users, each using the three BenchUsageSlots, in
// group BenchGroup.
const (
	BenchUsageDays  = 90
	BenchUsageUsers = 50
)

// BenchUsageSlots are the slots of the fair-share benchmark's history.
var BenchUsageSlots = []string{"cpu", "mem", "cuda.device"}

// BenchDecayedUsageOn makes a database with e, a fairshare group
// BenchGroup (the default half-life, seven days), runs the first rollup
// at the suite's clock origin, writes the history with fill and has the
// database analyze it, then times LoadSnapshot of the group:
//
//   - uncached: the full read of every hour (LoadSnapshotUncached), what
//     each round cost before the fair-share cache;
//   - first: a store instance's first load, which reads the history whole
//     into its cache (the instance is opened and closed off the clock);
//   - warm: later loads, one a second, the watermark unmoved;
//   - rolled: later loads, each after a rollup a minute on (off the
//     clock), so that the cache moves its edge every hour;
//   - fifo: the load of a group "plain" of the same (empty) cluster
//     under fifo, which reads no history: the rest of a load's cost.
//
// fill is the engine's set-based SQL writing the history: {hours} hourly
// rows back from the hour starting at {end} (Unix seconds), inclusive,
// for users u0 … u{users}-1 (projects p0 … p4) and the three slots.
func BenchDecayedUsageOn(b *testing.B, e Engine, fill string) {
	db := e.NewDB(b)
	reg := domain.DefaultRegistry()
	open := func() store.Store {
		s, err := e.Open(b.Context(), db, Options{Registry: reg})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	s := open()
	b.Cleanup(func() { s.Close() })
	g := domain.ResourceGroup{Name: BenchGroup, State: domain.GroupActive, Sequencer: domain.FairShareSequencer,
		Selector: "concentrated", HeadOfLine: domain.HOLSkip, MaxRetries: 3}
	if err := s.PutResourceGroup(b.Context(), g); err != nil {
		b.Fatal(err)
	}
	g.Name, g.Sequencer = "plain", "fifo"
	if err := s.PutResourceGroup(b.Context(), g); err != nil {
		b.Fatal(err)
	}
	if _, err := s.RollupUsage(b.Context(), base); err != nil {
		b.Fatal(err)
	}
	r := strings.NewReplacer("{hours}", strconv.Itoa(BenchUsageDays*24), "{users}", strconv.Itoa(BenchUsageUsers),
		"{end}", strconv.FormatInt(base.Truncate(time.Hour).Unix(), 10))
	e.Exec(b, db, r.Replace(fill))
	e.Exec(b, db, "ANALYZE")
	fresh, ok := s.(uncachedLoader)
	if !ok {
		b.Skip("the store reads snapshots without a cache")
	}
	load := func(b *testing.B, s store.Store, now time.Time) {
		snap, err := s.LoadSnapshot(b.Context(), BenchGroup, now)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Decayed) != BenchUsageUsers {
			b.Fatalf("decayed usage of %d users, want %d", len(snap.Decayed), BenchUsageUsers)
		}
	}
	b.Run("uncached", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := fresh.LoadSnapshotUncached(b.Context(), BenchGroup, base); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			other := open()
			b.StartTimer()
			load(b, other, base)
			b.StopTimer()
			other.Close()
			b.StartTimer()
		}
	})
	// The clock only goes forward, across the runs the framework makes
	// of each.
	now := base
	b.Run("warm", func(b *testing.B) {
		load(b, s, now)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			now = now.Add(time.Second)
			load(b, s, now)
		}
	})
	b.Run("rolled", func(b *testing.B) {
		load(b, s, now)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			now = now.Add(time.Minute)
			b.StopTimer()
			if _, err := s.RollupUsage(b.Context(), now); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			load(b, s, now)
		}
	})
	b.Run("fifo", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			now = now.Add(time.Second)
			if _, err := s.LoadSnapshot(b.Context(), "plain", now); err != nil {
				b.Fatal(err)
			}
		}
	})
}
