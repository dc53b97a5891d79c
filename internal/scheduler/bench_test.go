package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

// benchSnapshot builds a busy group: agents of three shapes (a fifth with
// 8 GPUs), each already about half occupied, and sessions of mixed sizes —
// 10% ask for GPUs, 5% are multi-node gangs of 2 to 4 kernels — from 200
// users in three priority bands. About half the sessions fit, so the round
// exercises both placement and the blocker paths.
func benchSnapshot(agents, sessions int, seq string) *framework.Snapshot {
	rng := rand.New(rand.NewPCG(uint64(agents), uint64(sessions)))
	reg := schedtest.Registry()
	vec := func(cpu int, mem int64, gpu int) domain.Vec {
		v := reg.NewVec()
		v[0] = domain.Quantity(cpu * 1000)
		v[1] = domain.Quantity(mem << 30)
		v[2] = domain.Quantity(gpu * 1000)
		return v
	}
	as := make([]domain.Agent, agents)
	for i := range as {
		var capacity domain.Vec
		switch r := rng.IntN(10); {
		case r < 6:
			capacity = vec(32, 128, 0)
		case r < 8:
			capacity = vec(64, 256, 0)
		default:
			capacity = vec(48, 384, 8)
		}
		occ := reg.NewVec()
		for s := range occ {
			occ[s] = capacity[s] / 1000 * domain.Quantity(rng.IntN(1000)) // 0–100% of each slot
		}
		as[i] = domain.Agent{
			ID: domain.AgentID(fmt.Sprintf("agent-%06d", i)), ResourceGroup: "default", Architecture: "x86_64",
			Status: domain.AgentAlive, Schedulable: true, Capacity: capacity, Occupied: occ,
		}
	}
	cpus := []int{1, 2, 4, 8}
	mems := []int64{2, 4, 8, 16, 32}
	ps := make([]framework.PendingSession, sessions)
	for i := range ps {
		gpu := 0
		if rng.IntN(10) == 0 {
			gpu = 1 << rng.IntN(3)
		}
		b := schedtest.MakeSession(fmt.Sprintf("s-%07d", i), "").
			User(fmt.Sprintf("user-%03d", rng.IntN(200))).
			Priority(10 * rng.IntN(3)).
			Created(i)
		if rng.IntN(20) == 0 {
			b.Multi(2 + rng.IntN(3))
		}
		p := b.Obj()
		req := vec(cpus[rng.IntN(len(cpus))], mems[rng.IntN(len(mems))], gpu)
		p.Session.Requested = req
		for k := range p.Kernels {
			p.Kernels[k].Requested = req
		}
		ps[i] = p
	}
	snap := schedtest.MakeSnapshot(as, ps)
	snap.Group.Sequencer = seq
	if seq == "fairshare" {
		// Every user has a history: cpu and, for a third, GPU use.
		for u := range 200 {
			d := framework.DecayedUsage{Project: "p1", User: fmt.Sprintf("user-%03d", u), Slots: make([]float64, reg.Len())}
			d.Slots[0] = float64(rng.IntN(1000)) * 3.6e6
			if u%3 == 0 {
				d.Slots[len(d.Slots)-1] = float64(rng.IntN(100)) * 3.6e6
			}
			snap.Decayed = append(snap.Decayed, d)
		}
	}
	return snap
}

func BenchmarkSchedule(b *testing.B) {
	for _, size := range []struct {
		name             string
		agents, sessions int
	}{
		{"1k_agents_10k_sessions", 1_000, 10_000},
		{"2k_agents_20k_sessions", 2_000, 20_000},
		{"5k_agents_50k_sessions", 5_000, 50_000},
		{"10k_agents_100k_sessions", 10_000, 100_000},
	} {
		b.Run(size.name, func(b *testing.B) {
			for _, seq := range []string{"fifo", "drf", "fairshare"} {
				b.Run(seq, func(b *testing.B) {
					snap := benchSnapshot(size.agents, size.sessions, seq)
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
		})
	}
}

// BenchmarkScheduleSelectors runs the same round with each selector, once
// answered from the round's agent index and once by the plain full scan
// (ScanRegistry), side by side so the comparison holds on a shared machine.
func BenchmarkScheduleSelectors(b *testing.B) {
	for _, sel := range []string{"concentrated", "dispersed", "round-robin"} {
		for _, way := range []struct {
			name string
			reg  func() *scheduler.Registry
		}{{"index", scheduler.NewRegistry}, {"scan", scheduler.ScanRegistry}} {
			b.Run(sel+"/"+way.name, func(b *testing.B) {
				snap := benchSnapshot(5_000, 50_000, "fifo")
				snap.Group.Selector = sel
				s := scheduler.New(way.reg())
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.Schedule(snap); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(50_000*float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
			})
		}
	}
}

// BenchmarkScheduleHeadOfLine runs the same busy round under skip and
// under reserve, side by side: every agent's occupancy is one holding
// ending within a day (a tenth never), every session has a time limit, so
// reserve makes its reservations and keeps later sessions off them.
func BenchmarkScheduleHeadOfLine(b *testing.B) {
	for _, size := range []struct {
		name             string
		agents, sessions int
	}{
		{"1k_agents_10k_sessions", 1_000, 10_000},
		{"5k_agents_50k_sessions", 5_000, 50_000},
	} {
		for _, hol := range []domain.HeadOfLine{domain.HOLSkip, domain.HOLReserve} {
			b.Run(size.name+"/"+string(hol), func(b *testing.B) {
				snap := benchSnapshot(size.agents, size.sessions, "fifo")
				rng := rand.New(rand.NewPCG(7, uint64(size.agents)))
				for _, a := range snap.Agents {
					h := framework.Holding{Agent: a.ID, Session: domain.SessionID("r-" + string(a.ID)), Slots: a.Occupied}
					if rng.IntN(10) > 0 {
						h.Ends = snap.Now.Add(time.Duration(1+rng.IntN(86400)) * time.Second)
					}
					snap.Holdings = append(snap.Holdings, h)
				}
				for i := range snap.Pending {
					snap.Pending[i].Session.TimeLimit = time.Duration(60+rng.IntN(86400)) * time.Second
				}
				snap.Group.HeadOfLine, snap.Group.ReservationDepth = hol, domain.DefaultReservationDepth
				s := scheduler.New(scheduler.NewRegistry())
				var placed, reserved int
				b.ReportAllocs()
				for b.Loop() {
					plan, err := s.Schedule(snap)
					if err != nil {
						b.Fatal(err)
					}
					placed, reserved = len(plan.Placements), len(plan.Reservations)
				}
				b.ReportMetric(float64(size.sessions)*float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
				b.ReportMetric(float64(placed), "placed")
				b.ReportMetric(float64(reserved), "reserved")
			})
		}
	}
}
