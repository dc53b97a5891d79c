package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

// genReserveSnapshot draws a busy group under head-of-line reserve: every
// agent's occupied slots and kernel count are exactly its holdings', which
// end at random times (some never, some overdue), and the pending sessions,
// single-node and gangs, carry random time limits.
func genReserveSnapshot(t *rapid.T) *framework.Snapshot {
	reg := schedtest.Registry()
	nAgents := rapid.IntRange(1, 6).Draw(t, "agents")
	agents := make([]domain.Agent, nAgents)
	var holdings []framework.Holding
	ends := func(label string) int {
		switch rapid.IntRange(0, 5).Draw(t, label+".kind") {
		case 0:
			return 0 // no limit
		case 1:
			return -rapid.IntRange(1, 50).Draw(t, label+".overdue")
		}
		return rapid.IntRange(1, 1000).Draw(t, label)
	}
	for i := range agents {
		capacity := reg.NewVec()
		capacity[0] = domain.Quantity(rapid.IntRange(1, 16).Draw(t, "cap.cpu") * 1000)
		capacity[2] = domain.Quantity(rapid.IntRange(0, 8).Draw(t, "cap.gpu") * 1000)
		a := domain.Agent{ID: domain.AgentID(fmt.Sprintf("a%02d", i)), ResourceGroup: "default",
			Architecture: "x86_64", Status: domain.AgentAlive, Schedulable: true,
			Capacity: capacity, Occupied: reg.NewVec()}
		free := capacity.Clone()
		for k := range rapid.IntRange(0, 4).Draw(t, "held") {
			slots := reg.NewVec()
			slots[0] = free[0] * domain.Quantity(rapid.IntRange(0, 4).Draw(t, "h.cpu")) / 4
			slots[2] = free[2] * domain.Quantity(rapid.IntRange(0, 4).Draw(t, "h.gpu")) / 4
			free.Sub(slots)
			a.Occupied.Add(slots)
			a.KernelCount++
			h := framework.Holding{Agent: a.ID, Session: domain.SessionID(fmt.Sprintf("r%d-%d", i, k)), Slots: slots}
			if e := ends("h.ends"); e != 0 {
				h.Ends = schedtest.T0.Add(time.Duration(e) * time.Second)
			}
			holdings = append(holdings, h)
		}
		if rapid.IntRange(0, 3).Draw(t, "capped") == 0 {
			a.MaxKernels = a.KernelCount + rapid.IntRange(0, 3).Draw(t, "room")
			if a.MaxKernels == 0 {
				a.MaxKernels = 1
			}
		}
		agents[i] = a
	}
	pending := make([]framework.PendingSession, rapid.IntRange(1, 14).Draw(t, "sessions"))
	for i := range pending {
		b := schedtest.MakeSession(fmt.Sprintf("s%02d", i), "").
			Priority(rapid.IntRange(0, 1).Draw(t, "prio")).
			Created(rapid.IntRange(0, 10).Draw(t, "created"))
		if n := rapid.IntRange(1, 3).Draw(t, "size"); rapid.Bool().Draw(t, "multi") {
			b.Multi(n)
		} else {
			b.Single(n)
		}
		if e := rapid.IntRange(-1, 1200).Draw(t, "limit"); e > 0 {
			b.Limit(e)
		}
		p := b.Obj()
		req := reg.NewVec()
		req[0] = domain.Quantity(rapid.IntRange(1, 8).Draw(t, "req.cpu") * 1000)
		req[2] = domain.Quantity(rapid.IntRange(0, 4).Draw(t, "req.gpu") * 1000)
		for k := range p.Kernels {
			p.Kernels[k].Requested = req.Clone()
		}
		p.Session.Requested = req
		pending[i] = p
	}
	snap := schedtest.MakeSnapshot(agents, pending)
	snap.Group.HeadOfLine = domain.HOLReserve
	snap.Group.ReservationDepth = rapid.IntRange(1, 3).Draw(t, "depth")
	snap.Group.Sequencer = rapid.SampledFrom([]string{"fifo", "lifo", "drf"}).Draw(t, "sequencer")
	snap.Group.Selector = rapid.SampledFrom([]string{"concentrated", "dispersed", "round-robin"}).Draw(t, "selector")
	snap.Holdings = holdings
	snap.Usage.Users = map[string]framework.Use{}
	for _, p := range pending {
		snap.Usage.Users[p.Session.Owner.User] = framework.Use{Occupied: reg.NewVec()}
	}
	return snap
}

// TestReservePropertiesHold replays every round's reservations against its
// placements: with everything the round placed on the agents, and every
// session (running or just placed) ending at its time limit, each reserved
// session still has its slots on its agents at its shadow time, after the
// reservations made before it took theirs. So no backfilled session delays
// a reservation's start. The plan also keeps every invariant of
// checkPlan and does not depend on input order.
func TestReservePropertiesHold(t *testing.T) {
	t.Parallel()
	s := scheduler.New(scheduler.NewRegistry())
	rapid.Check(t, func(t *rapid.T) {
		snap := genReserveSnapshot(t)
		plan, err := s.Schedule(snap)
		if err != nil {
			t.Fatalf("Schedule: %v", err)
		}
		checkPlan(t, snap, plan)
		checkReservations(t, snap, plan)

		shuffled := *snap
		shuffled.Agents = rapid.Permutation(snap.Agents).Draw(t, "agentOrder")
		shuffled.Pending = rapid.Permutation(snap.Pending).Draw(t, "pendingOrder")
		shuffled.Holdings = rapid.Permutation(snap.Holdings).Draw(t, "holdingOrder")
		again, err := s.Schedule(&shuffled)
		if err != nil {
			t.Fatalf("Schedule (shuffled): %v", err)
		}
		if diff := cmp.Diff(plan, again); diff != "" {
			t.Fatalf("plan depends on input order (-first +shuffled):\n%s", diff)
		}
	})
}

func checkReservations(t *rapid.T, snap *framework.Snapshot, plan framework.Plan) {
	limits := map[domain.SessionID]time.Duration{}
	for _, p := range snap.Pending {
		limits[p.Session.ID] = p.Session.TimeLimit
	}
	if len(plan.Reservations) > snap.Group.ReservationDepth {
		t.Fatalf("%d reservations, depth %d", len(plan.Reservations), snap.Group.ReservationDepth)
	}
	if len(plan.Reservations) == 0 && len(plan.Backfilled) > 0 {
		t.Fatalf("backfilled %v with no reservation", plan.Backfilled)
	}
	placed := map[domain.SessionID]bool{}
	for _, p := range plan.Placements {
		placed[p.Session] = true
	}
	taken := map[domain.AgentID]domain.Vec{} // earlier reservations' needs
	takenK := map[domain.AgentID]int{}
	for _, r := range plan.Reservations {
		if placed[r.Session] {
			t.Fatalf("reserved session %s was placed", r.Session)
		}
		if r.Start.Before(snap.Now) {
			t.Fatalf("reservation of %s starts at %v, before now %v", r.Session, r.Start, snap.Now)
		}
		running := func(ends time.Time) bool { return ends.IsZero() || ends.After(r.Start) }
		for _, need := range r.Agents {
			var agent domain.Agent
			for _, a := range snap.Agents {
				if a.ID == need.Agent {
					agent = a
				}
			}
			free := agent.Capacity.Clone()
			kernels := 0
			for _, h := range snap.Holdings {
				if h.Agent == need.Agent && running(h.Ends) {
					free.Sub(h.Slots)
					kernels++
				}
			}
			for _, p := range plan.Placements {
				var ends time.Time
				if l := limits[p.Session]; l > 0 {
					ends = snap.Now.Add(l)
				}
				for _, k := range p.Kernels {
					if k.Agent == need.Agent && running(ends) {
						free.Sub(k.Slots)
						kernels++
					}
				}
			}
			if v, ok := taken[need.Agent]; ok {
				free.Sub(v)
			}
			kernels += takenK[need.Agent]
			if _, fits := domain.Fits(need.Slots, free); !fits {
				t.Fatalf("reservation of %s from %v: needs %v on %s, only %v free then (placed %v)",
					r.Session, r.Start, need.Slots, need.Agent, free, plan.Backfilled)
			}
			if agent.MaxKernels > 0 && kernels+int(need.Kernels) > agent.MaxKernels {
				t.Fatalf("reservation of %s from %v: %d kernels on %s with %d there, cap %d",
					r.Session, r.Start, need.Kernels, need.Agent, kernels, agent.MaxKernels)
			}
		}
		for _, need := range r.Agents {
			if taken[need.Agent] == nil {
				taken[need.Agent] = schedtest.Registry().NewVec()
			}
			taken[need.Agent].Add(need.Slots)
			takenK[need.Agent] += int(need.Kernels)
		}
	}
}
