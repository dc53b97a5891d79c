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

// advanceOne is the lifecycle's next step from each live status, as the
// snapshot cache test moves sessions on.
var advanceOne = map[domain.SessionStatus]domain.Transition{
	domain.SessionScheduled: {Session: domain.SessionPreparing, Kernel: domain.KernelPreparing},
	domain.SessionPreparing: {Session: domain.SessionPrepared, Kernel: domain.KernelPrepared},
	domain.SessionPrepared:  {Session: domain.SessionCreating, Kernel: domain.KernelCreating},
	domain.SessionCreating:  {Session: domain.SessionRunning, Kernel: domain.KernelRunning},
	domain.SessionRunning:   {Session: domain.SessionTerminating, Kernel: domain.KernelTerminating},
}

// cacheWorld is the snapshot cache test's world: two store instances on
// one database, the groups, agents and sessions made so far, a seeded
// source of choices and a clock.
type cacheWorld struct {
	f       *fixture
	stores  []store.Store
	rng     *rand.Rand
	gpu     domain.SlotID
	groups  []string
	agents  map[string][]domain.AgentID
	epochs  map[domain.AgentID]int64
	groupOf map[domain.SessionID]string
	// sessions are in the order they were made, which the choices
	// depend on.
	sessions                   []domain.SessionID
	placed, granted, preempted int
	clock                      int
}

// cacheOp is one kind of random change; do returns what it changed.
type cacheOp struct {
	name   string
	weight int
	do     func() string
}

// testSnapshotCacheIsExact: after every one of a few hundred random
// changes — sessions made, placed (with device grants and preemptions),
// moved along their lifecycle, sent back, cancelled and ended; agents
// registered, lost, cordoned, resized and heartbeating; policies; the feed
// pruned — made through either of two store instances, the snapshot each
// instance loads through its cache equals the one read afresh from the
// tables, for every group. Only an agent's last heartbeat, which no round
// reads, may lag.
func testSnapshotCacheIsExact(t *testing.T, e Engine) {
	f := newFixture(t, e)
	other := f.open(Options{Registry: f.reg})
	fresh, ok := f.s.(uncachedLoader)
	if !ok {
		t.Skip("the store reads snapshots without a cache")
	}
	w := newCacheWorld(f, other)
	ops := w.ops()
	var total int
	for _, op := range ops {
		total += op.weight
	}
	for step := range 300 {
		w.clock += 1 + w.rng.IntN(60)
		n := w.rng.IntN(total)
		i := 0
		for ; n >= ops[i].weight; i++ {
			n -= ops[i].weight
		}
		what := ops[i].do()
		w.check(fresh, fmt.Sprintf("step %d (%s %s)", step, ops[i].name, what))
	}
	t.Logf("%d placements applied, %d with device grants; %d sessions preempted", w.placed, w.granted, w.preempted)
	if w.placed == 0 || w.granted == 0 || w.preempted == 0 {
		t.Fatalf("the random changes missed a kind of placement: %d placed, %d with devices, %d preempted",
			w.placed, w.granted, w.preempted)
	}
	f.invariant()
}

// newCacheWorld makes groups r (reserving and preempting) and s, and five
// agents, one of them with devices.
func newCacheWorld(f *fixture, other store.Store) *cacheWorld {
	gpu, _ := f.reg.Lookup("cuda.device")
	w := &cacheWorld{f: f, stores: []store.Store{f.s, other}, rng: rand.New(rand.NewPCG(16, 1)), gpu: gpu,
		groups: []string{"r", "s"}, agents: map[string][]domain.AgentID{}, epochs: map[domain.AgentID]int64{},
		groupOf: map[domain.SessionID]string{}, clock: 100}
	f.group("r", func(g *domain.ResourceGroup) {
		g.HeadOfLine, g.ReservationDepth = domain.HOLReserve, 2
		g.Preemption = domain.Preemption{Enabled: true, Budget: 1000, Window: time.Hour}
	})
	f.group("s")
	w.addAgent("r1", "r")
	w.addAgent("r2", "r")
	w.addAgent("d1", "r", withDevices("cuda:2"))
	w.addAgent("s1", "s")
	w.addAgent("s2", "s")
	return w
}

// check fails the test where a store's cached snapshot of a group
// differs from the one read afresh.
func (w *cacheWorld) check(fresh uncachedLoader, after string) {
	f := w.f
	opts := cmp.Options{cmpopts.IgnoreFields(domain.Agent{}, "LastHeartbeat"),
		cmpopts.IgnoreFields(framework.Snapshot{}, "Slots"), cmpopts.EquateEmpty()}
	for _, g := range w.groups {
		want, err := fresh.LoadSnapshotUncached(f.ctx, g, w.now())
		f.must(err, "uncached snapshot of %s", g)
		for j, s := range w.stores {
			got, err := s.LoadSnapshot(f.ctx, g, w.now())
			f.must(err, "snapshot of %s", g)
			if diff := cmp.Diff(want, got, opts); diff != "" {
				f.t.Fatalf("%s, store %d, group %s: cached snapshot differs from the tables (-want +got):\n%s",
					after, j, g, diff)
			}
		}
	}
}

func (w *cacheWorld) addAgent(id, group string, mods ...func(*domain.Agent)) {
	a := w.f.agent(id, group, []string{"cpu", "16", "mem", "32g"}, mods...)
	w.agents[group] = append(w.agents[group], a.ID)
	w.epochs[a.ID] = a.Epoch
}

func (w *cacheWorld) pick() store.Store { return w.stores[w.rng.IntN(2)] }
func (w *cacheWorld) now() time.Time    { return at(w.clock) }
func (w *cacheWorld) status(id domain.SessionID) domain.SessionStatus {
	return w.f.get(id).Session.Status
}

func (w *cacheWorld) inStatus(st ...domain.SessionStatus) []domain.SessionID {
	var out []domain.SessionID
	for _, id := range w.sessions {
		if slices.Contains(st, w.status(id)) {
			out = append(out, id)
		}
	}
	return out
}

func (w *cacheWorld) anyOf(ids []domain.SessionID) (domain.SessionID, bool) {
	if len(ids) == 0 {
		return "", false
	}
	return ids[w.rng.IntN(len(ids))], true
}

func (w *cacheWorld) move(id domain.SessionID, from domain.SessionStatus, to domain.Transition) {
	_, err := w.pick().TransitionSessions(w.f.ctx, []domain.SessionID{id}, []domain.SessionStatus{from}, to, "moved", w.now())
	w.f.must(err, "move %s from %s to %s", id, from, to.Session)
}

// anyAgent is a random agent of a random group.
func (w *cacheWorld) anyAgent() domain.AgentID {
	g := w.groups[w.rng.IntN(2)]
	return w.agents[g][w.rng.IntN(len(w.agents[g]))]
}

// ops are the kinds of change, weighted by how often they come.
func (w *cacheWorld) ops() []cacheOp {
	return []cacheOp{
		{"create", 6, w.create},
		{"place", 8, w.place},
		{"advance", 10, func() string {
			return w.advance(domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared,
				domain.SessionCreating, domain.SessionRunning)
		}},
		{"end", 4, w.end},
		{"requeue", 1, func() string {
			return w.moveAny(domain.SessionScheduled, domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending})
		}},
		{"cancel", 1, func() string {
			return w.moveAny(domain.SessionPending, domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled})
		}},
		{"agent status", 1, w.agentStatus},
		{"cordon", 1, w.cordon},
		{"capacity", 1, w.capacity},
		{"heartbeat", 2, w.heartbeat},
		{"register", 1, w.register},
		{"policy", 1, w.policy},
		{"read the feed", 3, w.readFeed},
		{"prune", 1, w.prune},
	}
}

func (w *cacheWorld) create() string {
	f, rng := w.f, w.rng
	id := domain.SessionID(fmt.Sprintf("x%03d", len(w.sessions)))
	g := w.groups[rng.IntN(2)]
	user := []string{"alice", "bob", "carol"}[rng.IntN(3)]
	req := []string{"cpu", fmt.Sprint(1 + rng.IntN(3))}
	if g == "r" && rng.IntN(3) == 0 {
		req = append(req, "cuda.device", "1")
	}
	s, ks := f.build(string(id), g, user, 1+rng.IntN(2), req, func(s *domain.Session) {
		s.TimeLimit = time.Duration(rng.IntN(3)) * time.Hour
		s.Priority = rng.IntN(3)
		s.Preemptible = rng.IntN(2) == 0
		s.CreatedAt, s.StatusChangedAt = w.now(), w.now()
	})
	f.must(w.pick().CreateSession(f.ctx, s, ks), "create %s", id)
	w.sessions, w.groupOf[id] = append(w.sessions, id), g
	return string(id)
}

// place places a pending session, on the device agent where it asks for
// a GPU, and in group r may preempt a running session for it.
func (w *cacheWorld) place() string {
	f, rng := w.f, w.rng
	id, ok := w.anyOf(w.inStatus(domain.SessionPending))
	if !ok {
		return ""
	}
	g := w.groupOf[id]
	s := f.get(id)
	var on []domain.AgentID
	for range s.Kernels {
		on = append(on, w.agents[g][rng.IntN(len(w.agents[g]))])
	}
	p := placement(s, on...)
	for i := range p.Kernels {
		if p.Kernels[i].Slots.At(w.gpu) > 0 {
			dev := rng.IntN(2)
			p.Kernels[i].Agent = "d1"
			p.Kernels[i].Devices = []domain.DeviceGrant{grant(fmt.Sprintf("cuda:%d", dev), dev, "cuda.device", 1000)}
		}
	}
	plan := framework.Plan{Group: g, Placements: []framework.Placement{p}}
	var running []domain.SessionID
	for _, v := range w.inStatus(domain.SessionRunning) {
		if w.groupOf[v] == g {
			running = append(running, v)
		}
	}
	if victim, ok := w.anyOf(running); ok && g == "r" && rng.IntN(2) == 0 {
		plan.Preemptions = []framework.Preemption{{Victim: victim, Preemptor: id, Reason: "preempted by " + string(id)}}
	}
	res, err := w.pick().ApplyPlan(f.ctx, plan, w.now())
	f.must(err, "apply %+v", plan)
	if len(res.Applied) > 0 {
		w.placed++
		if len(p.Kernels[0].Devices) > 0 {
			w.granted++
		}
	}
	w.preempted += len(res.Preempted)
	return string(id)
}

// advance moves a session in one of the statuses st one step on.
func (w *cacheWorld) advance(st ...domain.SessionStatus) string {
	id, ok := w.anyOf(w.inStatus(st...))
	if !ok {
		return ""
	}
	from := w.status(id)
	w.move(id, from, advanceOne[from])
	return string(id)
}

// moveAny makes move to on a session in status from.
func (w *cacheWorld) moveAny(from domain.SessionStatus, to domain.Transition) string {
	id, ok := w.anyOf(w.inStatus(from))
	if !ok {
		return ""
	}
	w.move(id, from, to)
	return string(id)
}

// end ends a terminating session's kernels, then the session.
func (w *cacheWorld) end() string {
	f := w.f
	id, ok := w.anyOf(w.inStatus(domain.SessionTerminating))
	if !ok {
		return ""
	}
	for _, k := range f.get(id).Kernels {
		if k.Status == domain.KernelTerminating {
			_, err := w.pick().UpdateKernel(f.ctx, store.KernelUpdate{Kernel: k.ID,
				From: []domain.KernelStatus{domain.KernelTerminating}, To: domain.KernelTerminated, Now: w.now(), ExitCode: new(int)})
			f.must(err, "end kernel %s", k.ID)
		}
	}
	w.move(id, domain.SessionTerminating, domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated})
	return string(id)
}

func (w *cacheWorld) agentStatus() string {
	id := w.anyAgent()
	st := []domain.AgentStatus{domain.AgentAlive, domain.AgentAlive, domain.AgentLost}[w.rng.IntN(3)]
	w.f.must(w.pick().SetAgentStatus(w.f.ctx, id, st), "agent %s %s", id, st)
	return string(id)
}

func (w *cacheWorld) cordon() string {
	id := w.anyAgent()
	w.f.must(w.pick().SetAgentSchedulable(w.f.ctx, id, w.rng.IntN(2) == 0), "cordon %s", id)
	return string(id)
}

func (w *cacheWorld) capacity() string {
	f, rng := w.f, w.rng
	id := w.agents["s"][rng.IntN(len(w.agents["s"]))]
	_, err := w.pick().SetAgentCapacity(f.ctx, id, w.epochs[id], f.slots("cpu", fmt.Sprint(4+rng.IntN(8)), "mem", "32g"))
	f.must(err, "resize %s", id)
	return string(id)
}

func (w *cacheWorld) heartbeat() string {
	id := w.agents["r"][w.rng.IntN(len(w.agents["r"]))]
	// A LOST agent's heartbeat is refused (it must register
	// again) and changes nothing.
	if err := w.pick().Heartbeat(w.f.ctx, id, w.epochs[id], w.now()); !errors.Is(err, store.ErrGuardFailed) {
		w.f.must(err, "heartbeat %s", id)
	}
	return string(id)
}

func (w *cacheWorld) register() string {
	g := w.groups[w.rng.IntN(2)]
	id := fmt.Sprintf("%s%d", g, len(w.agents[g])+1)
	w.addAgent(id, g)
	return id
}

func (w *cacheWorld) policy() string {
	user := []string{"alice", "bob", "carol"}[w.rng.IntN(3)]
	p := domain.Policy{Scope: domain.ScopeUser, Name: user, MaxSlots: domain.Unlimited(w.f.reg.Len()),
		MaxConcurrentSessions: 1 + w.rng.IntN(5)}
	w.f.must(w.pick().PutPolicy(w.f.ctx, p), "policy %s", user)
	return user
}

func (w *cacheWorld) readFeed() string {
	// Reading numbers the feed on PostgreSQL: the caches then
	// follow positions, not only rows still without one.
	_, err := w.pick().Changes(w.f.ctx, store.ChangeFilter{Limit: 1})
	w.f.must(err, "read the feed")
	return ""
}

// prune makes changes the caches have not read, then prunes them from
// the feed.
func (w *cacheWorld) prune() string {
	for range 2 {
		if id, ok := w.anyOf(w.inStatus(domain.SessionPending)); ok {
			w.move(id, domain.SessionPending, domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled})
		}
		if id, ok := w.anyOf(w.inStatus(domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared,
			domain.SessionCreating, domain.SessionRunning)); ok {
			st := w.status(id)
			w.move(id, st, advanceOne[st])
		}
	}
	_, err := w.pick().PruneChanges(w.f.ctx, at(1<<30))
	w.f.must(err, "prune")
	return ""
}
