package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// uncachedLoader is what a store offers to read a snapshot without its
// cache, the reference the cache is held to.
type uncachedLoader interface {
	LoadSnapshotUncached(ctx context.Context, group string, now time.Time) (framework.Snapshot, error)
}

// testSnapshotCacheIsExact: after every one of a few hundred random
// changes — sessions made, placed (with device grants and preemptions),
// moved along their lifecycle, sent back, cancelled and ended; agents
// registered, lost, cordoned, resized and heartbeating; policies; the feed
// pruned — made through either of two store instances, the snapshot each
// instance loads through its cache equals the one read afresh from the
// tables, for every group. Only an agent's last heartbeat, which no round
// reads, may lag.
// advanceOne is the lifecycle's next step from each live status, as the
// snapshot cache test moves sessions on.
var advanceOne = map[domain.SessionStatus]domain.Transition{
	domain.SessionScheduled: {Session: domain.SessionPreparing, Kernel: domain.KernelPreparing},
	domain.SessionPreparing: {Session: domain.SessionPrepared, Kernel: domain.KernelPrepared},
	domain.SessionPrepared:  {Session: domain.SessionCreating, Kernel: domain.KernelCreating},
	domain.SessionCreating:  {Session: domain.SessionRunning, Kernel: domain.KernelRunning},
	domain.SessionRunning:   {Session: domain.SessionTerminating, Kernel: domain.KernelTerminating},
}

func testSnapshotCacheIsExact(t *testing.T, e Engine) {
	f := newFixture(t, e)
	other := f.open(Options{Registry: f.reg})
	fresh, ok := f.s.(uncachedLoader)
	if !ok {
		t.Skip("the store reads snapshots without a cache")
	}
	groups := []string{"r", "s"}
	f.group("r", func(g *domain.ResourceGroup) {
		g.HeadOfLine, g.ReservationDepth = domain.HOLReserve, 2
		g.Preemption = domain.Preemption{Enabled: true, Budget: 1000, Window: time.Hour}
	})
	f.group("s")
	agents := map[string][]domain.AgentID{}
	epochs := map[domain.AgentID]int64{}
	addAgent := func(id, group string, mods ...func(*domain.Agent)) {
		a := f.agent(id, group, []string{"cpu", "16", "mem", "32g"}, mods...)
		agents[group] = append(agents[group], a.ID)
		epochs[a.ID] = a.Epoch
	}
	addAgent("r1", "r")
	addAgent("r2", "r")
	addAgent("d1", "r", withDevices("cuda:2"))
	addAgent("s1", "s")
	addAgent("s2", "s")

	gpu, _ := f.reg.Lookup("cuda.device")
	rng := rand.New(rand.NewPCG(16, 1))
	stores := []store.Store{f.s, other}
	pick := func() store.Store { return stores[rng.IntN(2)] }
	var sessions []domain.SessionID
	var placed, granted, preempted int
	groupOf := map[domain.SessionID]string{}
	clock := 100
	now := func() time.Time { return at(clock) }
	status := func(id domain.SessionID) domain.SessionStatus { return f.get(id).Session.Status }
	inStatus := func(st ...domain.SessionStatus) []domain.SessionID {
		var out []domain.SessionID
		for _, id := range sessions {
			if slices.Contains(st, status(id)) {
				out = append(out, id)
			}
		}
		return out
	}
	anyOf := func(ids []domain.SessionID) (domain.SessionID, bool) {
		if len(ids) == 0 {
			return "", false
		}
		return ids[rng.IntN(len(ids))], true
	}
	move := func(id domain.SessionID, from domain.SessionStatus, to domain.Transition) {
		_, err := pick().TransitionSessions(f.ctx, []domain.SessionID{id}, []domain.SessionStatus{from}, to, "moved", now())
		f.must(err, "move %s from %s to %s", id, from, to.Session)
	}

	ops := []struct {
		name string
		do   func() string
	}{
		{"create", func() string {
			id := domain.SessionID(fmt.Sprintf("x%03d", len(sessions)))
			g := groups[rng.IntN(2)]
			user := []string{"alice", "bob", "carol"}[rng.IntN(3)]
			req := []string{"cpu", fmt.Sprint(1 + rng.IntN(3))}
			if g == "r" && rng.IntN(3) == 0 {
				req = append(req, "cuda.device", "1")
			}
			s, ks := f.build(string(id), g, user, 1+rng.IntN(2), req, func(s *domain.Session) {
				s.TimeLimit = time.Duration(rng.IntN(3)) * time.Hour
				s.Priority = rng.IntN(3)
				s.Preemptible = rng.IntN(2) == 0
				s.CreatedAt, s.StatusChangedAt = now(), now()
			})
			f.must(pick().CreateSession(f.ctx, s, ks), "create %s", id)
			sessions, groupOf[id] = append(sessions, id), g
			return string(id)
		}},
		{"place", func() string {
			id, ok := anyOf(inStatus(domain.SessionPending))
			if !ok {
				return ""
			}
			g := groupOf[id]
			s := f.get(id)
			var on []domain.AgentID
			for range s.Kernels {
				on = append(on, agents[g][rng.IntN(len(agents[g]))])
			}
			p := placement(s, on...)
			for i := range p.Kernels {
				if p.Kernels[i].Slots.At(gpu) > 0 {
					dev := rng.IntN(2)
					p.Kernels[i].Agent = "d1"
					p.Kernels[i].Devices = []domain.DeviceGrant{grant(fmt.Sprintf("cuda:%d", dev), dev, "cuda.device", 1000)}
				}
			}
			plan := framework.Plan{Group: g, Placements: []framework.Placement{p}}
			var running []domain.SessionID
			for _, v := range inStatus(domain.SessionRunning) {
				if groupOf[v] == g {
					running = append(running, v)
				}
			}
			if victim, ok := anyOf(running); ok && g == "r" && rng.IntN(2) == 0 {
				plan.Preemptions = []framework.Preemption{{Victim: victim, Preemptor: id, Reason: "preempted by " + string(id)}}
			}
			res, err := pick().ApplyPlan(f.ctx, plan, now())
			f.must(err, "apply %+v", plan)
			if len(res.Applied) > 0 {
				placed++
				if len(p.Kernels[0].Devices) > 0 {
					granted++
				}
			}
			preempted += len(res.Preempted)
			return string(id)
		}},
		{"advance", func() string {
			id, ok := anyOf(inStatus(domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared,
				domain.SessionCreating, domain.SessionRunning))
			if !ok {
				return ""
			}
			st := status(id)
			move(id, st, advanceOne[st])
			return string(id)
		}},
		{"end", func() string {
			id, ok := anyOf(inStatus(domain.SessionTerminating))
			if !ok {
				return ""
			}
			for _, k := range f.get(id).Kernels {
				if k.Status == domain.KernelTerminating {
					_, err := pick().UpdateKernel(f.ctx, store.KernelUpdate{Kernel: k.ID,
						From: []domain.KernelStatus{domain.KernelTerminating}, To: domain.KernelTerminated, Now: now(), ExitCode: new(int)})
					f.must(err, "end kernel %s", k.ID)
				}
			}
			move(id, domain.SessionTerminating, domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated})
			return string(id)
		}},
		{"requeue", func() string {
			id, ok := anyOf(inStatus(domain.SessionScheduled))
			if !ok {
				return ""
			}
			move(id, domain.SessionScheduled, domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending})
			return string(id)
		}},
		{"cancel", func() string {
			id, ok := anyOf(inStatus(domain.SessionPending))
			if !ok {
				return ""
			}
			move(id, domain.SessionPending, domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled})
			return string(id)
		}},
		{"agent status", func() string {
			g := groups[rng.IntN(2)]
			id := agents[g][rng.IntN(len(agents[g]))]
			st := []domain.AgentStatus{domain.AgentAlive, domain.AgentAlive, domain.AgentLost}[rng.IntN(3)]
			f.must(pick().SetAgentStatus(f.ctx, id, st), "agent %s %s", id, st)
			return string(id)
		}},
		{"cordon", func() string {
			g := groups[rng.IntN(2)]
			id := agents[g][rng.IntN(len(agents[g]))]
			f.must(pick().SetAgentSchedulable(f.ctx, id, rng.IntN(2) == 0), "cordon %s", id)
			return string(id)
		}},
		{"capacity", func() string {
			id := agents["s"][rng.IntN(len(agents["s"]))]
			_, err := pick().SetAgentCapacity(f.ctx, id, epochs[id], f.slots("cpu", fmt.Sprint(4+rng.IntN(8)), "mem", "32g"))
			f.must(err, "resize %s", id)
			return string(id)
		}},
		{"heartbeat", func() string {
			id := agents["r"][rng.IntN(len(agents["r"]))]
			// A LOST agent's heartbeat is refused (it must register
			// again) and changes nothing.
			if err := pick().Heartbeat(f.ctx, id, epochs[id], now()); !errors.Is(err, store.ErrGuardFailed) {
				f.must(err, "heartbeat %s", id)
			}
			return string(id)
		}},
		{"register", func() string {
			g := groups[rng.IntN(2)]
			id := fmt.Sprintf("%s%d", g, len(agents[g])+1)
			addAgent(id, g)
			return id
		}},
		{"policy", func() string {
			user := []string{"alice", "bob", "carol"}[rng.IntN(3)]
			p := domain.Policy{Scope: domain.ScopeUser, Name: user, MaxSlots: domain.Unlimited(f.reg.Len()),
				MaxConcurrentSessions: 1 + rng.IntN(5)}
			f.must(pick().PutPolicy(f.ctx, p), "policy %s", user)
			return user
		}},
		{"read the feed", func() string {
			// Reading numbers the feed on PostgreSQL: the caches then
			// follow positions, not only rows still without one.
			_, err := pick().Changes(f.ctx, store.ChangeFilter{Limit: 1})
			f.must(err, "read the feed")
			return ""
		}},
		{"prune", func() string {
			// Changes the caches have not read, then gone from the feed.
			for range 2 {
				if id, ok := anyOf(inStatus(domain.SessionPending)); ok {
					move(id, domain.SessionPending, domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled})
				}
				if id, ok := anyOf(inStatus(domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared,
					domain.SessionCreating, domain.SessionRunning)); ok {
					st := status(id)
					move(id, st, advanceOne[st])
				}
			}
			_, err := pick().PruneChanges(f.ctx, at(1<<30))
			f.must(err, "prune")
			return ""
		}},
	}
	weights := []int{6, 8, 10, 4, 1, 1, 1, 1, 1, 2, 1, 1, 3, 1}
	var total int
	for _, w := range weights {
		total += w
	}
	opts := cmp.Options{cmpopts.IgnoreFields(domain.Agent{}, "LastHeartbeat"),
		cmpopts.IgnoreFields(framework.Snapshot{}, "Slots"), cmpopts.EquateEmpty()}
	for step := range 300 {
		clock += 1 + rng.IntN(60)
		n := rng.IntN(total)
		i := 0
		for ; n >= weights[i]; i++ {
			n -= weights[i]
		}
		what := ops[i].do()
		for _, g := range groups {
			want, err := fresh.LoadSnapshotUncached(f.ctx, g, now())
			f.must(err, "uncached snapshot of %s", g)
			for j, s := range stores {
				got, err := s.LoadSnapshot(f.ctx, g, now())
				f.must(err, "snapshot of %s", g)
				if diff := cmp.Diff(want, got, opts); diff != "" {
					t.Fatalf("step %d (%s %s), store %d, group %s: cached snapshot differs from the tables (-want +got):\n%s",
						step, ops[i].name, what, j, g, diff)
				}
			}
		}
	}
	t.Logf("%d placements applied, %d with device grants; %d sessions preempted", placed, granted, preempted)
	if placed == 0 || granted == 0 || preempted == 0 {
		t.Fatalf("the random changes missed a kind of placement: %d placed, %d with devices, %d preempted",
			placed, granted, preempted)
	}
	f.invariant()
}
