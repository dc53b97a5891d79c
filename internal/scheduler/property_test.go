package scheduler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

// genSnapshot draws a small, messy group: agents of two architectures, some
// lost, cordoned, capped or already busy; sessions of three users with
// dependencies, start times, designations, gangs and quotas.
func genSnapshot(t *rapid.T) *framework.Snapshot { return genSnapshotSized(t, 8, 25) }

// genSnapshotSized is genSnapshot with up to maxAgents agents, a quarter of
// them twins of an earlier one (the same capacity, occupancy and kernel
// cap, so selectors must break ties), and up to maxSessions sessions.
func genSnapshotSized(t *rapid.T, maxAgents, maxSessions int) *framework.Snapshot {
	reg := schedtest.Registry()
	archs := []string{"x86_64", "aarch64"}
	vec := func(label string, cpuMax, memMaxG, gpuMax int) domain.Vec {
		v := reg.NewVec()
		v[0] = domain.Quantity(rapid.IntRange(0, cpuMax*2).Draw(t, label+".cpu") * 500) // halves of a core
		v[1] = domain.Quantity(rapid.IntRange(0, memMaxG).Draw(t, label+".mem")) << 30
		v[2] = domain.Quantity(rapid.IntRange(0, gpuMax).Draw(t, label+".gpu") * 1000)
		return v
	}
	nAgents := rapid.IntRange(0, maxAgents).Draw(t, "agents")
	agents := make([]domain.Agent, nAgents)
	for i := range agents {
		capacity := vec("cap", 16, 64, 4)
		occ := reg.NewVec()
		for s := range occ {
			occ[s] = capacity[s] * domain.Quantity(rapid.IntRange(0, 4).Draw(t, "occ")) / 4
		}
		a := domain.Agent{
			ID: domain.AgentID(fmt.Sprintf("a%02d", i)), ResourceGroup: "default",
			Architecture: rapid.SampledFrom(archs).Draw(t, "arch"),
			Status:       rapid.SampledFrom([]domain.AgentStatus{domain.AgentAlive, domain.AgentAlive, domain.AgentAlive, domain.AgentLost}).Draw(t, "status"),
			Schedulable:  rapid.IntRange(0, 5).Draw(t, "cordon") > 0,
			Capacity:     capacity, Occupied: occ,
		}
		if rapid.Bool().Draw(t, "capped") {
			a.MaxKernels = rapid.IntRange(1, 4).Draw(t, "maxKernels")
			a.KernelCount = rapid.IntRange(0, a.MaxKernels).Draw(t, "kernels")
		}
		if i > 0 && rapid.IntRange(0, 3).Draw(t, "twin") == 0 {
			of := agents[rapid.IntRange(0, i-1).Draw(t, "twinOf")]
			a.Capacity, a.Occupied = of.Capacity.Clone(), of.Occupied.Clone()
			a.MaxKernels, a.KernelCount = of.MaxKernels, of.KernelCount
		}
		agents[i] = a
	}
	users := []string{"u1", "u2", "u3"}
	// Most sessions take one of a few sizes, as real ones do, so rounds
	// meet the same request again after the agents changed under it.
	sizes := make([]domain.Vec, rapid.IntRange(1, 4).Draw(t, "sizes"))
	for i := range sizes {
		sizes[i] = vec("size", 6, 16, 2)
	}
	nSessions := rapid.IntRange(0, maxSessions).Draw(t, "sessions")
	pending := make([]framework.PendingSession, nSessions)
	deps := map[domain.SessionID]framework.DependencyState{}
	depStates := []framework.DependencyState{
		{Status: domain.SessionRunning},
		{Status: domain.SessionTerminated, Outcome: domain.OutcomeSuccess},
		{Status: domain.SessionTerminated, Outcome: domain.OutcomeFailure},
		{Status: domain.SessionCancelled, Outcome: domain.OutcomeCancelled},
	}
	for i := range deps {
		_ = i
	}
	for i := range pending {
		b := schedtest.MakeSession(fmt.Sprintf("s%02d", i), "").
			User(rapid.SampledFrom(users).Draw(t, "user")).
			Priority(rapid.IntRange(0, 2).Draw(t, "prio")).
			Created(rapid.IntRange(0, 10).Draw(t, "created")).
			Arch(rapid.SampledFrom(archs).Draw(t, "sarch"))
		n := rapid.IntRange(1, 3).Draw(t, "size")
		if rapid.Bool().Draw(t, "multi") {
			b.Multi(n)
		} else {
			b.Single(n)
		}
		if rapid.IntRange(0, 4).Draw(t, "hasDep") == 0 {
			dep := fmt.Sprintf("d%d", rapid.IntRange(0, 4).Draw(t, "dep"))
			b.DependsOn(dep)
		}
		if rapid.IntRange(0, 5).Draw(t, "hasStart") == 0 {
			b.StartsAt(rapid.IntRange(-60, 60).Draw(t, "startsAt"))
		}
		// Strict designation names one agent, which may not exist; a
		// preference may name several, repeated or not.
		agentID := func(label string, hi int) string { return fmt.Sprintf("a%02d", rapid.IntRange(0, hi).Draw(t, label)) }
		if nAgents > 0 && rapid.IntRange(0, 4).Draw(t, "designate") == 0 {
			if rapid.Bool().Draw(t, "strict") {
				b.Designated(true, agentID("dagent", nAgents))
			} else {
				for range rapid.IntRange(1, 3).Draw(t, "ndesignated") {
					b.Designated(false, agentID("dagent", nAgents))
				}
			}
		}
		if nAgents > 0 && rapid.IntRange(0, 4).Draw(t, "avoid") == 0 {
			for range rapid.IntRange(1, 3).Draw(t, "navoid") {
				b.Avoid(agentID("aagent", nAgents-1))
			}
		}
		p := b.Obj()
		req := rapid.SampledFrom(sizes).Draw(t, "req").Clone()
		if rapid.IntRange(0, 3).Draw(t, "odd") == 0 {
			req = vec("req", 6, 16, 2)
		}
		for k := range p.Kernels {
			p.Kernels[k].Requested = req.Clone()
		}
		p.Session.Requested = req
		pending[i] = p
	}
	for i := range 4 { // d4 stays missing
		deps[domain.SessionID(fmt.Sprintf("d%d", i))] = depStates[i]
	}
	snap := schedtest.MakeSnapshot(agents, pending)
	snap.Dependencies = deps
	snap.Group.Sequencer = rapid.SampledFrom([]string{"fifo", "lifo", "drf", "fairshare"}).Draw(t, "sequencer")
	snap.Group.Selector = rapid.SampledFrom([]string{"concentrated", "dispersed", "round-robin"}).Draw(t, "selector")
	snap.Group.HeadOfLine = rapid.SampledFrom([]domain.HeadOfLine{domain.HOLSkip, domain.HOLBlock, domain.HOLReserve}).Draw(t, "hol")
	snap.Group.ReservationDepth = rapid.IntRange(0, 3).Draw(t, "depth")
	snap.Group.State = rapid.SampledFrom([]domain.GroupState{domain.GroupActive, domain.GroupActive, domain.GroupActive, domain.GroupDraining, domain.GroupStopped}).Draw(t, "state")
	if nAgents > 0 {
		snap.Cursor = domain.AgentID(fmt.Sprintf("a%02d", rapid.IntRange(0, nAgents-1).Draw(t, "cursor")))
	}
	snap.Usage.GroupUsers = map[string]domain.Vec{}
	snap.Usage.Users = map[string]framework.Use{}
	snap.Policies.Users = map[string]domain.Policy{}
	for _, u := range users {
		held := vec("held", 8, 32, 2)
		snap.Usage.GroupUsers[u] = held
		snap.Usage.Users[u] = framework.Use{Occupied: held, Active: rapid.IntRange(0, 3).Draw(t, "active")}
		if rapid.Bool().Draw(t, "limited") {
			limits := domain.Unlimited(reg.Len())
			limits[0] = held[0] + domain.Quantity(rapid.IntRange(0, 16).Draw(t, "cpuLimit")*1000)
			snap.Policies.Users[u] = domain.Policy{MaxSlots: limits, MaxConcurrentSessions: rapid.IntRange(0, 6).Draw(t, "maxConc")}
		}
	}
	if snap.Group.Sequencer == "fairshare" {
		for _, u := range users {
			d := framework.DecayedUsage{Project: "p1", User: u, Slots: make([]float64, reg.Len())}
			d.Slots[0] = float64(rapid.IntRange(0, 1000).Draw(t, "history") * 1e6)
			snap.Decayed = append(snap.Decayed, d)
		}
	}
	snap.Now = schedtest.T0.Add(time.Duration(rapid.IntRange(0, 30).Draw(t, "now")) * time.Second)
	return snap
}

func TestSchedulePropertiesHold(t *testing.T) {
	t.Parallel()
	s := scheduler.New(scheduler.NewRegistry())
	rapid.Check(t, func(t *rapid.T) {
		snap := genSnapshot(t)
		plan, err := s.Schedule(snap)
		if err != nil {
			t.Fatalf("Schedule: %v", err)
		}
		checkPlan(t, snap, plan)

		// The same snapshot, with its agents and sessions in another order,
		// gives the same plan: nothing depends on input or map order.
		shuffled := *snap
		shuffled.Agents = rapid.Permutation(snap.Agents).Draw(t, "agentOrder")
		shuffled.Pending = rapid.Permutation(snap.Pending).Draw(t, "pendingOrder")
		again, err := s.Schedule(&shuffled)
		if err != nil {
			t.Fatalf("Schedule (shuffled): %v", err)
		}
		if diff := cmp.Diff(plan, again); diff != "" {
			t.Fatalf("plan depends on input order (-first +shuffled):\n%s", diff)
		}
	})
}

func checkPlan(t *rapid.T, snap *framework.Snapshot, plan framework.Plan) {
	agents := map[domain.AgentID]domain.Agent{}
	free := map[domain.AgentID]domain.Vec{}
	kernels := map[domain.AgentID]int{}
	for _, a := range snap.Agents {
		agents[a.ID] = a
		f := a.Capacity.Clone()
		f.Sub(a.Occupied)
		free[a.ID] = f
		kernels[a.ID] = a.KernelCount
	}
	sessions := map[domain.SessionID]framework.PendingSession{}
	for _, p := range snap.Pending {
		sessions[p.Session.ID] = p
	}
	seen := map[domain.SessionID]string{}
	mark := func(id domain.SessionID, where string) {
		if prev, dup := seen[id]; dup {
			t.Fatalf("session %s is both %s and %s", id, prev, where)
		}
		if _, ok := sessions[id]; !ok {
			t.Fatalf("plan names unknown session %s", id)
		}
		seen[id] = where
	}
	held := map[string]domain.Vec{}
	active := map[string]int{}
	for _, p := range plan.Placements {
		mark(p.Session, "placed")
		ps := sessions[p.Session]
		if !snap.Group.State.Schedules() {
			t.Fatalf("session %s placed in a %s group", p.Session, snap.Group.State)
		}
		// Gangs are whole: every kernel, once, in order.
		if len(p.Kernels) != len(ps.Kernels) {
			t.Fatalf("session %s placed %d of %d kernels", p.Session, len(p.Kernels), len(ps.Kernels))
		}
		for k, kp := range p.Kernels {
			if kp.Kernel != ps.Kernels[k].ID {
				t.Fatalf("session %s kernel %d placed as %s", p.Session, k, kp.Kernel)
			}
			a, ok := agents[kp.Agent]
			if !ok || a.Status != domain.AgentAlive || !a.Schedulable || a.Architecture != ps.Session.Architecture {
				t.Fatalf("kernel %s on ineligible agent %+v", kp.Kernel, a)
			}
			if ps.Session.DesignatedStrict && len(ps.Session.DesignatedAgents) > 0 && kp.Agent != ps.Session.DesignatedAgents[0] {
				t.Fatalf("kernel %s on %s, strictly designated %v", kp.Kernel, kp.Agent, ps.Session.DesignatedAgents)
			}
			if ps.Session.ClusterMode == domain.SingleNode && kp.Agent != p.Kernels[0].Agent {
				t.Fatalf("single-node session %s split over agents", p.Session)
			}
			free[kp.Agent].Sub(kp.Slots)
			kernels[kp.Agent]++
		}
		u := ps.Session.Owner.User
		if held[u] == nil {
			held[u] = snap.Usage.Users[u].Occupied.Clone()
			active[u] = snap.Usage.Users[u].Active
		}
		for _, k := range ps.Kernels {
			held[u].Add(k.Requested)
		}
		active[u]++
	}
	// No agent slot is ever over-committed, nor a kernel cap exceeded.
	for id, f := range free {
		before := agents[id].Capacity.Clone()
		before.Sub(agents[id].Occupied)
		for s, q := range f {
			if q < 0 && q < before[s] {
				t.Fatalf("agent %s slot %d over-committed: %d free", id, s, q)
			}
		}
		if mk := agents[id].MaxKernels; mk > 0 && kernels[id] > mk && kernels[id] > agents[id].KernelCount {
			t.Fatalf("agent %s holds %d kernels, cap %d", id, kernels[id], mk)
		}
	}
	// Quotas hold for what the round added.
	for u, v := range held {
		p, ok := snap.Policies.Users[u]
		if !ok {
			continue
		}
		if p.MaxSlots != nil && v[0] > p.MaxSlots[0] {
			t.Fatalf("user %s holds %d cpu, limit %d", u, v[0], p.MaxSlots[0])
		}
		if p.MaxConcurrentSessions > 0 && active[u] > max(p.MaxConcurrentSessions, snap.Usage.Users[u].Active) {
			t.Fatalf("user %s holds %d sessions, cap %d", u, active[u], p.MaxConcurrentSessions)
		}
	}
	// A session left waiting for capacity really fits nowhere: free slots
	// only shrink during a round, so if it fit an eligible agent at the end
	// it fit at its turn, and the round wrongly passed it by (as a gang
	// that was not rolled back would make it).
	for _, d := range plan.Waiting {
		ps := sessions[d.Session]
		if d.Blockers[0].Kind != framework.BlockCapacity || ps.Session.ClusterMode != domain.SingleNode || heldOff(d) {
			continue
		}
		total := schedtest.Registry().NewVec()
		for _, k := range ps.Kernels {
			total.Add(k.Requested)
		}
		for id, a := range agents {
			eligible := a.Status == domain.AgentAlive && a.Schedulable && a.Architecture == ps.Session.Architecture &&
				(a.MaxKernels == 0 || kernels[id]+len(ps.Kernels) <= a.MaxKernels)
			if ps.Session.DesignatedStrict && len(ps.Session.DesignatedAgents) > 0 {
				eligible = eligible && id == ps.Session.DesignatedAgents[0]
			}
			if _, fits := domain.Fits(total, free[id]); eligible && fits {
				t.Fatalf("session %s waits for capacity but fits agent %s at the end of the round", d.Session, id)
			}
		}
	}
	for _, d := range plan.Waiting {
		mark(d.Session, "waiting")
		if len(d.Blockers) == 0 {
			t.Fatalf("waiting session %s has no blocker", d.Session)
		}
		for _, b := range d.Blockers {
			if b.Impossible {
				t.Fatalf("waiting session %s has impossible blocker %+v", d.Session, b)
			}
		}
	}
	for _, d := range plan.Impossible {
		mark(d.Session, "impossible")
		found := false
		for _, b := range d.Blockers {
			found = found || b.Impossible
		}
		if !found {
			t.Fatalf("impossible session %s has no impossible blocker: %+v", d.Session, d.Blockers)
		}
	}
	if len(seen) != len(snap.Pending) {
		t.Fatalf("plan accounts for %d of %d sessions", len(seen), len(snap.Pending))
	}
}

// heldOff reports whether a session was kept off slots reserved for another:
// it may fit them at the end of the round.
func heldOff(d framework.Decision) bool {
	for _, b := range d.Blockers {
		if b.Kind == framework.BlockReservation && strings.HasPrefix(b.Scope, "session:") {
			return true
		}
	}
	return false
}
