package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

// TestReserveBoundHoldsOverRounds checks the guarantee docs/SCHEDULING.md
// states, over many rounds rather than one: in a FIFO band where every
// session runs exactly its time limit (the worst case the model allows),
// the session holding a group's first reservation starts no later than
// the shadow time it was first given, however many sessions arrive and
// backfill meanwhile, and its shadow time never moves later.
//
// Rounds run every minute; limits are whole minutes, so every end falls
// on a round. Sessions of one to eight cpu and gangs of two to four
// whole 8-cpu agents arrive at random on four agents.
func TestReserveBoundHoldsOverRounds(t *testing.T) {
	t.Parallel()
	s := scheduler.New(scheduler.NewRegistry())
	rapid.Check(t, func(t *rapid.T) {
		type arrival struct {
			p  framework.PendingSession
			at int // minute
		}
		type running struct {
			id     domain.SessionID
			agent  domain.AgentID
			slots  domain.Vec
			endMin int
		}
		const agents, step = 4, time.Minute
		var arrivals []arrival
		for i := range rapid.IntRange(1, 30).Draw(t, "sessions") {
			// Submitted in arrival order, as FIFO assumes: a session that
			// arrives later is behind every one already waiting.
			at := rapid.IntRange(0, 40).Draw(t, "arrive")
			b := schedtest.MakeSession(fmt.Sprintf("s%02d", i), "").Created(at*60 + i).
				Limit(60 * rapid.IntRange(1, 20).Draw(t, "limitMin"))
			cpu := rapid.IntRange(1, 8).Draw(t, "cpu")
			if rapid.IntRange(0, 4).Draw(t, "gang") == 0 {
				b.Multi(rapid.IntRange(2, agents).Draw(t, "gangSize"))
				cpu = 8
			}
			p := b.Obj()
			for k := range p.Kernels {
				p.Kernels[k].Requested = schedtest.Slots(fmt.Sprintf("cpu=%d", cpu))
			}
			arrivals = append(arrivals, arrival{p: p, at: at})
		}
		var run []running
		pending := map[domain.SessionID]framework.PendingSession{}
		started := map[domain.SessionID]int{}
		promised := map[domain.SessionID]time.Time{} // first shadow time as the first reservation
		for minute := 0; minute < 400 && len(started) < len(arrivals); minute++ {
			now := schedtest.T0.Add(time.Duration(minute) * step)
			for _, a := range arrivals {
				if a.at == minute {
					pending[a.p.Session.ID] = a.p
				}
			}
			kept := run[:0]
			for _, r := range run {
				if r.endMin > minute {
					kept = append(kept, r)
				}
			}
			run = kept
			var ags []*schedtest.AgentB
			occupied := map[domain.AgentID]domain.Vec{}
			var holdings []framework.Holding
			for _, r := range run {
				if occupied[r.agent] == nil {
					occupied[r.agent] = schedtest.Registry().NewVec()
				}
				occupied[r.agent].Add(r.slots)
				holdings = append(holdings, framework.Holding{Agent: r.agent, Session: r.id, Slots: r.slots,
					Ends: schedtest.T0.Add(time.Duration(r.endMin) * step)})
			}
			for i := range agents {
				id := domain.AgentID(fmt.Sprintf("a%d", i))
				b := schedtest.MakeAgent(string(id), "cpu=8")
				if v := occupied[id]; v != nil {
					b.Occupied(fmt.Sprintf("cpu=%d", v[0]/1000))
				}
				ags = append(ags, b)
			}
			var ps []framework.PendingSession
			for _, a := range arrivals {
				if p, ok := pending[a.p.Session.ID]; ok {
					ps = append(ps, p)
				}
			}
			snap := schedtest.MakeSnapshot(schedtest.Agents(ags...), ps)
			snap.Now = now
			snap.Group.HeadOfLine, snap.Group.ReservationDepth = domain.HOLReserve, 3
			snap.Holdings = holdings
			plan, err := s.Schedule(snap)
			if err != nil {
				t.Fatalf("Schedule: %v", err)
			}
			for _, pl := range plan.Placements {
				p := pending[pl.Session]
				delete(pending, pl.Session)
				started[pl.Session] = minute
				if at, ok := promised[pl.Session]; ok && now.After(at) {
					t.Fatalf("minute %d: %s starts at %v, after its reservation's %v", minute, pl.Session, now, at)
				}
				for _, k := range pl.Kernels {
					run = append(run, running{id: pl.Session, agent: k.Agent, slots: k.Slots,
						endMin: minute + int(p.Session.TimeLimit/step)})
				}
			}
			if len(plan.Reservations) > 0 {
				first := plan.Reservations[0]
				at, ok := promised[first.Session]
				switch {
				case !ok:
					promised[first.Session] = first.Start
				case first.Start.After(at):
					t.Fatalf("minute %d: %s's shadow time moved from %v to %v", minute, first.Session, at, first.Start)
				}
			}
		}
	})
}
