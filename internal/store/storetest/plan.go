package storetest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

func testLoadSnapshot(t *testing.T, e Engine) {
	f := newFixture(t, e)
	g := f.group("g", func(g *domain.ResourceGroup) { g.Sequencer = "drf" })
	f.group("other")
	a1 := f.agent("a1", "g", []string{"cpu", "8", "mem", "16g"})
	a2 := f.agent("a2", "g", []string{"cpu", "4"})
	f.must(f.s.SetAgentStatus(f.ctx, "a2", domain.AgentLost), "lose a2")
	a2.Status = domain.AgentLost
	f.agent("b1", "other", []string{"cpu", "8"})

	// alice holds cpu 2 in g and cpu 3 elsewhere; bob holds nothing.
	r1 := f.session("r1", "g", "alice", 1, []string{"cpu", "2"})
	f.schedule("g", r1, "a1")
	run := f.session("run", "other", "alice", 1, []string{"cpu", "3"})
	f.schedule("other", run, "b1")
	f.advance("run", domain.SessionRunning)
	gone := f.session("gone", "other", "carol", 1, []string{"cpu", "1"})
	_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{gone.Session.ID}, []domain.SessionStatus{domain.SessionPending},
		domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "user", at(5))
	f.must(err, "cancel gone")

	p2 := f.session("p2", "g", "bob", 2, []string{"cpu", "2"}, func(s *domain.Session) {
		s.CreatedAt = at(2)
		s.DependsOn = []domain.SessionID{"gone", "run"}
	})
	p1 := f.session("p1", "g", "alice", 1, []string{"cpu", "1"}, func(s *domain.Session) { s.CreatedAt = at(0) })
	f.session("elsewhere", "other", "alice", 1, []string{"cpu", "1"})

	alice := domain.Policy{Scope: domain.ScopeUser, Name: "alice", MaxSlots: domain.Unlimited(f.reg.Len()), MaxConcurrentSessions: 2}
	bobProject := domain.Policy{Scope: domain.ScopeProject, Name: "p-bob", MaxSlots: domain.Unlimited(f.reg.Len()), MaxPendingSessions: 1}
	dom := domain.Policy{Scope: domain.ScopeDomain, Name: "default", MaxSlots: f.slots("cpu", "100")}
	carol := domain.Policy{Scope: domain.ScopeUser, Name: "carol", MaxSlots: domain.Unlimited(f.reg.Len())}
	for _, p := range []domain.Policy{alice, bobProject, dom, carol} {
		f.must(f.s.PutPolicy(f.ctx, p), "put policy %s", p.Name)
	}

	got, err := f.s.LoadSnapshot(f.ctx, "g", at(30))
	f.must(err, "load")
	a1 = f.getAgent("a1")
	cpu5, cpu2 := f.slots("cpu", "5"), f.slots("cpu", "2")
	want := framework.Snapshot{
		Now: at(30), Slots: f.reg, Group: g,
		Agents:  []domain.Agent{a1, a2},
		Pending: []framework.PendingSession{{Session: p1.Session, Kernels: p1.Kernels}, {Session: p2.Session, Kernels: p2.Kernels}},
		Dependencies: map[domain.SessionID]framework.DependencyState{
			"run":  {Status: domain.SessionRunning},
			"gone": {Status: domain.SessionCancelled, Outcome: domain.OutcomeCancelled},
		},
		Usage: framework.Usage{
			Users:      map[string]framework.Use{"alice": {Occupied: cpu5, Active: 2}},
			Projects:   map[string]framework.Use{"p-alice": {Occupied: cpu5, Active: 2}},
			Domains:    map[string]framework.Use{"default": {Occupied: cpu5, Active: 2}},
			GroupUsers: map[string]domain.Vec{"alice": cpu2},
		},
		Policies: framework.Policies{
			Users:    map[string]domain.Policy{"alice": alice},
			Projects: map[string]domain.Policy{"p-bob": bobProject},
			Domains:  map[string]domain.Policy{"default": dom},
		},
	}
	opts := []cmp.Option{
		cmp.Comparer(func(a, b *domain.Registry) bool { return a == b }),
		cmpopts.SortSlices(func(a, b domain.Agent) bool { return a.ID < b.ID }),
	}
	if diff := cmp.Diff(want, got, opts...); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}

	_, err = f.s.LoadSnapshot(f.ctx, "nowhere", at(30))
	wantErr(t, err, store.ErrNotFound, "snapshot of unknown group")
	empty, err := f.s.LoadSnapshot(f.ctx, "other", at(30))
	f.must(err, "load other")
	if len(empty.Pending) != 1 || empty.Pending[0].Session.ID != "elsewhere" || len(empty.Usage.GroupUsers) != 1 {
		t.Errorf("other group: pending %v, group users %v", empty.Pending, empty.Usage.GroupUsers)
	}
	f.invariant()
}

func testApplyPlan(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "4", "mem", "8g"})
	f.agent("a2", "g", []string{"cpu", "4", "mem", "8g"})
	s1 := f.session("s1", "g", "alice", 1, []string{"cpu", "1", "mem", "1g"})
	s2 := f.session("s2", "g", "bob", 2, []string{"cpu", "2"})

	res, err := f.s.ApplyPlan(f.ctx, framework.Plan{
		Group:      "g",
		Placements: []framework.Placement{placement(s1, "a1"), placement(s2, "a1", "a2")},
		Cursor:     "a2",
	}, at(10))
	f.must(err, "apply")
	if diff := cmp.Diff(store.ApplyResult{Applied: []domain.SessionID{"s1", "s2"}}, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		session domain.SessionID
		agents  []domain.AgentID
	}{{"s1", []domain.AgentID{"a1"}}, {"s2", []domain.AgentID{"a1", "a2"}}} {
		got := f.get(tc.session)
		if got.Session.Status != domain.SessionScheduled || !got.Session.StatusChangedAt.Equal(at(10)) {
			t.Errorf("%s: %s since %v, want SCHEDULED since %v", tc.session, got.Session.Status, got.Session.StatusChangedAt, at(10))
		}
		for i, k := range got.Kernels {
			if k.Status != domain.KernelScheduled || k.Agent != tc.agents[i] || !k.StatusChangedAt.Equal(at(10)) {
				t.Errorf("kernel %s: %s on %q since %v, want SCHEDULED on %s", k.ID, k.Status, k.Agent, k.StatusChangedAt, tc.agents[i])
			}
		}
	}
	// a1: s1 (cpu 1, mem 1g) + s2's main (cpu 2); a2: s2's sub (cpu 2).
	for _, tc := range []struct {
		agent   domain.AgentID
		want    domain.Vec
		kernels int
	}{{"a1", f.slots("cpu", "3", "mem", "1g"), 2}, {"a2", f.slots("cpu", "2"), 1}} {
		f.wantHeld(tc.agent, tc.want, tc.kernels)
	}
	snap, err := f.s.LoadSnapshot(f.ctx, "g", at(11))
	f.must(err, "snapshot")
	if snap.Cursor != "a2" || len(snap.Pending) != 0 {
		t.Errorf("after apply: cursor %q, %d pending; want a2 and none", snap.Cursor, len(snap.Pending))
	}
	f.invariant()
}

// testApplyPlanGuards checks each reason a placement is dropped: the whole
// placement goes, nothing of it is written, and the reason comes back.
func testApplyPlanGuards(t *testing.T, e Engine) {
	f := newFixture(t, e)
	for _, tc := range []struct {
		name string
		// setup builds the case in group g (agents a1 cpu 4, a2 cpu 1) and
		// returns the placement to try.
		setup func(g string, s store.SessionWithKernels) framework.Placement
		want  store.Rejection // Session is filled in; Detail is not compared
	}{
		{"session no longer pending", func(g string, s store.SessionWithKernels) framework.Placement {
			f.schedule(g, s, a(g, 1))
			return placement(s, a(g, 1))
		}, store.Rejection{Reason: store.RejectNotPending}},
		{"session cancelled", func(g string, s store.SessionWithKernels) framework.Placement {
			_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{s.Session.ID}, []domain.SessionStatus{domain.SessionPending},
				domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "", at(5))
			f.must(err, "cancel")
			return placement(s, a(g, 1))
		}, store.Rejection{Reason: store.RejectNotPending}},
		{"session missing", func(g string, s store.SessionWithKernels) framework.Placement {
			p := placement(s, a(g, 1))
			p.Session = "ghost"
			return p
		}, store.Rejection{Session: "ghost", Reason: store.RejectSessionMissing}},
		{"session of another group", func(g string, s store.SessionWithKernels) framework.Placement {
			other := f.session(g+"-x", g+"-other", "alice", 1, []string{"cpu", "1"})
			return placement(other, a(g, 1))
		}, store.Rejection{Reason: store.RejectWrongGroup}},
		{"agent of another group", func(g string, s store.SessionWithKernels) framework.Placement {
			return placement(s, domain.AgentID(g+"-other-a"))
		}, store.Rejection{Reason: store.RejectWrongGroup}},
		{"agent missing", func(g string, s store.SessionWithKernels) framework.Placement {
			return placement(s, "ghost")
		}, store.Rejection{Reason: store.RejectAgentMissing}},
		{"agent lost", func(g string, s store.SessionWithKernels) framework.Placement {
			f.must(f.s.SetAgentStatus(f.ctx, a(g, 1), domain.AgentLost), "lose")
			return placement(s, a(g, 1))
		}, store.Rejection{Reason: store.RejectAgentUnavailable}},
		{"agent cordoned", func(g string, s store.SessionWithKernels) framework.Placement {
			f.must(f.s.SetAgentSchedulable(f.ctx, a(g, 1), false), "cordon")
			return placement(s, a(g, 1))
		}, store.Rejection{Reason: store.RejectAgentUnavailable}},
		{"agent full", func(g string, s store.SessionWithKernels) framework.Placement {
			f.schedule(g, f.session(g+"-big", g, "bob", 1, []string{"cpu", "3.5"}), a(g, 1))
			return placement(s, a(g, 1)) // 1 cpu requested, 0.5 free
		}, store.Rejection{Reason: store.RejectCapacity, Slot: "cpu"}},
		{"slot the agent lacks", func(g string, s store.SessionWithKernels) framework.Placement {
			gpu := f.session(g+"-gpu", g, "bob", 1, []string{"cpu", "1", "cuda.device", "1"})
			return placement(gpu, a(g, 1))
		}, store.Rejection{Reason: store.RejectCapacity, Slot: "cuda.device"}},
		{"kernel cap", func(g string, s store.SessionWithKernels) framework.Placement {
			f.schedule(g, f.session(g+"-small", g, "bob", 1, []string{"cpu", "0.1"}), a(g, 3))
			return placement(s, a(g, 3)) // a3 takes one kernel
		}, store.Rejection{Reason: store.RejectMaxKernels, Slot: framework.KernelsSlot}},
		{"gang does not fit whole", func(g string, s store.SessionWithKernels) framework.Placement {
			gang := f.session(g+"-gang", g, "bob", 2, []string{"cpu", "2"})
			return placement(gang, a(g, 1), a(g, 2)) // a2 has cpu 1
		}, store.Rejection{Reason: store.RejectCapacity, Slot: "cpu"}},
		{"two kernels too many for one agent", func(g string, s store.SessionWithKernels) framework.Placement {
			gang := f.session(g+"-gang", g, "bob", 2, []string{"cpu", "3"})
			return placement(gang, a(g, 1)) // both on a1: cpu 6 of 4
		}, store.Rejection{Reason: store.RejectCapacity, Slot: "cpu"}},
		{"kernel left out", func(g string, s store.SessionWithKernels) framework.Placement {
			gang := f.session(g+"-gang", g, "bob", 2, []string{"cpu", "1"})
			p := placement(gang, a(g, 1))
			p.Kernels = p.Kernels[:1]
			return p
		}, store.Rejection{Reason: store.RejectKernelMismatch}},
		{"kernel placed twice", func(g string, s store.SessionWithKernels) framework.Placement {
			gang := f.session(g+"-gang", g, "bob", 2, []string{"cpu", "1"})
			p := placement(gang, a(g, 1))
			p.Kernels[1].Kernel = p.Kernels[0].Kernel
			return p
		}, store.Rejection{Reason: store.RejectKernelMismatch}},
		{"kernel of another session", func(g string, s store.SessionWithKernels) framework.Placement {
			other := f.session(g+"-o", g, "bob", 1, []string{"cpu", "1"})
			p := placement(s, a(g, 1))
			p.Kernels[0].Kernel = other.Kernels[0].ID
			return p
		}, store.Rejection{Reason: store.RejectKernelMismatch}},
		{"slots differ from the request", func(g string, s store.SessionWithKernels) framework.Placement {
			p := placement(s, a(g, 1))
			p.Kernels[0].Slots = f.slots("cpu", "0.5")
			return p
		}, store.Rejection{Reason: store.RejectKernelMismatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := "g" + strings.ReplaceAll(tc.name, " ", "-")
			f.group(g)
			f.group(g + "-other")
			f.agent(string(a(g, 1)), g, []string{"cpu", "4"})
			f.agent(string(a(g, 2)), g, []string{"cpu", "1"})
			f.agent(string(a(g, 3)), g, []string{"cpu", "4"}, func(x *domain.Agent) { x.MaxKernels = 1 })
			f.agent(g+"-other-a", g+"-other", []string{"cpu", "4"})
			s := f.session(g+"-s", g, "alice", 1, []string{"cpu", "1"})
			p := tc.setup(g, s)
			before := f.state(g)
			res := f.apply(g, p)
			want := tc.want
			if want.Session == "" {
				want.Session = p.Session
			}
			if len(res.Applied) != 0 || len(res.Rejected) != 1 {
				t.Fatalf("got %+v, want only the rejection %+v", res, want)
			}
			got := res.Rejected[0]
			if got.Detail == "" {
				t.Errorf("rejection %+v has no detail", got)
			}
			got.Detail, got.Agent = "", ""
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rejection (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, f.state(g)); diff != "" {
				t.Errorf("a rejected placement changed state (-before +after):\n%s", diff)
			}
			f.invariant()
		})
	}
}

func a(group string, n int) domain.AgentID {
	return domain.AgentID(group + "-a" + string(rune('0'+n)))
}

// groupState is what a rejected placement must leave untouched.
type groupState struct {
	Agents   []domain.Agent
	Sessions []store.SessionWithKernels
}

func (f *fixture) state(group string) groupState {
	f.t.Helper()
	agents, err := f.s.ListAgents(f.ctx, store.AgentFilter{Group: group})
	f.must(err, "list agents")
	sessions, err := f.s.ListSessions(f.ctx, store.SessionFilter{Group: group})
	f.must(err, "list sessions")
	st := groupState{Agents: agents}
	for _, s := range sessions {
		st.Sessions = append(st.Sessions, f.get(s.ID))
	}
	return st
}

func testApplyPlanSeesEarlierPlacements(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "3"})
	f.agent("a2", "g", []string{"cpu", "100"}, func(a *domain.Agent) { a.MaxKernels = 2 })
	s1 := f.session("s1", "g", "u", 1, []string{"cpu", "2"})
	s2 := f.session("s2", "g", "u", 1, []string{"cpu", "2"})
	s3 := f.session("s3", "g", "u", 1, []string{"cpu", "1"})
	t1 := f.session("t1", "g", "u", 1, []string{"cpu", "1"})
	t2 := f.session("t2", "g", "u", 1, []string{"cpu", "1"})
	t3 := f.session("t3", "g", "u", 1, []string{"cpu", "1"})

	res := f.apply("g",
		placement(s1, "a1"), placement(s2, "a1"), placement(s3, "a1"), // s2 no longer fits after s1
		placement(s1, "a2"),                                           // s1 was placed just above
		placement(t1, "a2"), placement(t2, "a2"), placement(t3, "a2"), // a2 takes two kernels
	)
	if diff := cmp.Diff([]domain.SessionID{"s1", "s3", "t1", "t2"}, res.Applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	var reasons []string
	for _, r := range res.Rejected {
		reasons = append(reasons, string(r.Session)+":"+string(r.Reason))
	}
	want := []string{"s2:capacity", "s1:not_pending", "t3:max_kernels"}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("rejected (-want +got):\n%s", diff)
	}
	f.wantHeld("a1", f.slots("cpu", "3"), 2)
	f.invariant()
}

func testApplyPlanErrors(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "3"})
	s1 := f.session("s1", "g", "u", 1, []string{"cpu", "2"})
	_, err := f.s.ApplyPlan(f.ctx, framework.Plan{Group: "nowhere", Placements: []framework.Placement{placement(s1, "a1")}}, at(3))
	wantErr(t, err, store.ErrNotFound, "plan of an unknown group")
	if got := f.get("s1").Session.Status; got != domain.SessionPending {
		t.Errorf("after a failed plan s1 is %s", got)
	}
	// An empty plan only saves the cursor.
	res := f.apply("g")
	if len(res.Applied)+len(res.Rejected) != 0 {
		t.Errorf("empty plan: %+v", res)
	}
	f.invariant()
}
