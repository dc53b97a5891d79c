package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
)

// BenchmarkScheduleDevices is BenchmarkSchedule's busy group with its GPU
// agents handing out their 8 GPUs as devices, part of them held, so every
// GPU placement assigns specific devices and every GPU blocker names them.
// Set beside BenchmarkSchedule's same size, it is the cost of devices.
func BenchmarkScheduleDevices(b *testing.B) {
	for _, size := range []struct {
		name             string
		agents, sessions int
	}{
		{"1k_agents_10k_sessions", 1_000, 10_000},
		{"10k_agents_100k_sessions", 10_000, 100_000},
	} {
		b.Run(size.name, func(b *testing.B) {
			snap := benchSnapshot(size.agents, size.sessions, "fifo")
			rng := rand.New(rand.NewPCG(7, uint64(size.agents)))
			devs, err := domain.ParseFakeDevices("cuda:8")
			if err != nil {
				b.Fatal(err)
			}
			snap.DeviceHeld = map[domain.AgentID]map[string]domain.Quantity{}
			for i := range snap.Agents {
				a := &snap.Agents[i]
				if a.Capacity[2] == 0 {
					continue
				}
				a.Devices = devs
				held := rng.IntN(9)
				a.Occupied[2] = domain.Quantity(held) * 1000
				h := map[string]domain.Quantity{}
				for d := range held {
					h[fmt.Sprintf("cuda:%d", d)] = 1000
				}
				snap.DeviceHeld[a.ID] = h
			}
			s := scheduler.New(scheduler.NewRegistry())
			var placed int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				plan, err := s.Schedule(snap)
				if err != nil {
					b.Fatal(err)
				}
				placed = len(plan.Placements)
			}
			b.ReportMetric(float64(size.sessions)*float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
			b.ReportMetric(float64(placed), "placed")
		})
	}
}
