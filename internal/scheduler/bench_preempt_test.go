package scheduler_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// BenchmarkSchedulePreemption is BenchmarkScheduleHeadOfLine's busy group
// with preemption on and no guards: every agent's load is one running,
// preemptible session of priority 0, and one pending session in two is
// of priority 50, so each of those that does not fit looks for victims.
func BenchmarkSchedulePreemption(b *testing.B) {
	for _, size := range []struct {
		name             string
		agents, sessions int
	}{
		{"1k_agents_10k_sessions", 1_000, 10_000},
	} {
		for _, on := range []bool{false, true} {
			name := size.name + "/off"
			if on {
				name = size.name + "/on"
			}
			b.Run(name, func(b *testing.B) {
				snap := benchSnapshot(size.agents, size.sessions, "fifo")
				rng := rand.New(rand.NewPCG(11, uint64(size.agents)))
				for _, a := range snap.Agents {
					snap.Holdings = append(snap.Holdings, framework.Holding{Agent: a.ID,
						Session: domain.SessionID("r-" + string(a.ID)), Slots: a.Occupied, Status: domain.SessionRunning,
						Preemptible: true, Started: snap.Now.Add(-time.Duration(1+rng.IntN(3600)) * time.Second)})
				}
				for i := range snap.Pending {
					snap.Pending[i].Session.Priority = 0
					if rng.IntN(2) == 0 {
						snap.Pending[i].Session.Priority = 50
					}
				}
				snap.Group.HeadOfLine = domain.HOLSkip
				snap.Group.Preemption = domain.Preemption{Enabled: on}
				s := scheduler.New(scheduler.NewRegistry())
				var placed, preempted int
				b.ReportAllocs()
				for b.Loop() {
					plan, err := s.Schedule(snap)
					if err != nil {
						b.Fatal(err)
					}
					placed, preempted = len(plan.Placements), len(plan.Preemptions)
				}
				b.ReportMetric(float64(size.sessions)*float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
				b.ReportMetric(float64(placed), "placed")
				b.ReportMetric(float64(preempted), "preempted")
			})
		}
	}
}
