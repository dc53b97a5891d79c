package storetest

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// The large data set of issue 18: the benchmark's data set (see
// BenchGroup) at 10k agents and 100k pending sessions, of which one plan
// places BenchScalePlaced — about what a round over a busy group of that
// size places.
const (
	BenchScaleAgents   = 10_000
	BenchScaleSessions = 100_000
	BenchScalePlaced   = 40_000
)

// BenchScaleOn makes a database with e, seeds the large data set with
// seed and measures the store's two parts of a scheduling cycle over it,
// as sub-benchmarks: LoadSnapshot of the group, and ApplyPlan of
// BenchScalePlaced placements. ApplyPlan runs last because it leaves the
// sessions it placed SCHEDULED.
func BenchScaleOn(b *testing.B, e Engine, seed BenchSeed) {
	s, reg := benchStore(b, e, seed, "concentrated", BenchScaleAgents, BenchScaleSessions, BenchAgentCPU)

	b.Run("LoadSnapshot", func(b *testing.B) {
		for b.Loop() {
			snap, err := s.LoadSnapshot(b.Context(), BenchGroup, at(1))
			if err != nil {
				b.Fatal(err)
			}
			if len(snap.Pending) != BenchScaleSessions || len(snap.Agents) != BenchScaleAgents {
				b.Fatalf("snapshot holds %d sessions and %d agents", len(snap.Pending), len(snap.Agents))
			}
		}
		b.ReportMetric(float64(BenchScaleSessions*b.N)/b.Elapsed().Seconds(), "sessions/s")
	})
	b.Run("ApplyPlan", func(b *testing.B) {
		BenchApplyPlan(b, s, reg, BenchScalePlaced, BenchScaleAgents)
	})
}

// BenchScaleStore makes a database with e and seeds the large data set in
// it, each agent offering cpu cpus, for benchmarks above the store (a
// whole scheduling cycle). A session asks for one cpu, so cpu sets how
// many of the pending sessions one round can place: all of them at
// BenchAgentCPU, BenchScalePlaced at 4. The group's selector is
// concentrated, as in BenchScaleOn.
func BenchScaleStore(b *testing.B, e Engine, seed BenchSeed, cpu int) (store.Store, *domain.Registry) {
	b.Helper()
	return benchStore(b, e, seed, "concentrated", BenchScaleAgents, BenchScaleSessions, cpu)
}
