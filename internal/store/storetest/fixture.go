package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// fixture is one test's database and store, with builders that fail the
// test on any error.
type fixture struct {
	t   *testing.T
	ctx context.Context
	e   Engine
	db  string
	reg *domain.Registry
	s   store.Store
}

func newFixture(t *testing.T, e Engine) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: t.Context(), e: e, db: e.NewDB(t), reg: domain.DefaultRegistry()}
	f.s = f.open(Options{Registry: f.reg})
	return f
}

// open opens another store instance on the fixture's database, closed when
// the test ends.
func (f *fixture) open(opts Options) store.Store {
	f.t.Helper()
	s, err := f.e.Open(f.ctx, f.db, opts)
	if err != nil {
		f.t.Fatalf("open store: %v", err)
	}
	f.t.Cleanup(func() {
		if err := s.Close(); err != nil {
			f.t.Errorf("close store: %v", err)
		}
	})
	return s
}

func (f *fixture) must(err error, what string, args ...any) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// wantErr fails unless err is of the class want.
func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want one that is %v", what, err, want)
	}
}

// winners counts the racers of a race whose errs[i] is nil; a racer that
// lost must have failed with one of lost, and any other error fails the
// test.
func winners(t *testing.T, what string, errs []error, lost ...error) int {
	t.Helper()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !slices.ContainsFunc(lost, func(l error) bool { return errors.Is(err, l) }):
			t.Errorf("%s %d: %v, want success or one of %v", what, i, err, lost)
		}
	}
	return won
}

// slots builds a vector from name/quantity pairs as users write them.
func (f *fixture) slots(pairs ...string) domain.Vec {
	f.t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	v, err := f.reg.ParseSlots(m)
	f.must(err, "parse slots %v", pairs)
	return v
}

func (f *fixture) group(name string, mods ...func(*domain.ResourceGroup)) domain.ResourceGroup {
	f.t.Helper()
	g := domain.ResourceGroup{
		Name: name, State: domain.GroupActive, Sequencer: "fifo", Selector: "concentrated",
		HeadOfLine: domain.HOLSkip, MaxRetries: domain.DefaultMaxRetries, Timeouts: domain.DefaultTimeouts(),
	}
	for _, m := range mods {
		m(&g)
	}
	f.must(f.s.PutResourceGroup(f.ctx, g), "put group %s", name)
	return g
}

// agent registers an agent with the given capacity pairs.
func (f *fixture) agent(id, group string, capacity []string, mods ...func(*domain.Agent)) domain.Agent {
	f.t.Helper()
	a := domain.Agent{
		ID: domain.AgentID(id), ResourceGroup: group, Address: "10.0.0.1:6001", Architecture: "x86_64",
		Runtime: "sim", Schedulable: true, Capacity: f.slots(capacity...),
	}
	for _, m := range mods {
		m(&a)
	}
	got, err := f.s.RegisterAgent(f.ctx, a, at(0))
	f.must(err, "register agent %s", id)
	return got
}

// session creates a PENDING session of n kernels, each requesting the
// given pairs.
func (f *fixture) session(id, group, user string, n int, request []string, mods ...func(*domain.Session)) store.SessionWithKernels {
	f.t.Helper()
	s, kernels := f.build(id, group, user, n, request, mods...)
	f.must(f.s.CreateSession(f.ctx, s, kernels), "create session %s", id)
	return f.get(s.ID)
}

// build is session's session and kernels, not stored.
func (f *fixture) build(id, group, user string, n int, request []string, mods ...func(*domain.Session)) (domain.Session, []domain.Kernel) {
	f.t.Helper()
	s := domain.Session{
		ID: domain.SessionID(id), Name: id, Owner: domain.Owner{User: user, Project: "p-" + user, Domain: "default"},
		Type: domain.TypeBatch, Image: "sleep", Architecture: "x86_64", ResourceGroup: group,
		ClusterMode: domain.SingleNode, ClusterSize: n, Requested: f.slots(request...), CreatedAt: at(1),
	}
	if n > 1 {
		s.ClusterMode = domain.MultiNode
	}
	for _, m := range mods {
		m(&s)
	}
	var kernels []domain.Kernel
	for i := range s.ClusterSize {
		role := domain.RoleSub
		if i == 0 {
			role = domain.RoleMain
		}
		kernels = append(kernels, domain.Kernel{
			ID: domain.KernelID(fmt.Sprintf("%s-k%d", id, i)), SessionID: s.ID, ClusterRole: role, ClusterIdx: i,
			Image: s.Image, Architecture: s.Architecture, Requested: s.Requested.Clone(),
		})
	}
	return s, kernels
}

func (f *fixture) get(id domain.SessionID) store.SessionWithKernels {
	f.t.Helper()
	s, err := f.s.GetSession(f.ctx, id)
	f.must(err, "get session %s", id)
	return s
}

func (f *fixture) getAgent(id domain.AgentID) domain.Agent {
	f.t.Helper()
	a, err := f.s.GetAgent(f.ctx, id)
	f.must(err, "get agent %s", id)
	return a
}

// placement puts the session's kernels on the agents in turn (the last
// agent takes the rest), with the slots they request.
func placement(s store.SessionWithKernels, agents ...domain.AgentID) framework.Placement {
	p := framework.Placement{Session: s.Session.ID}
	for i, k := range s.Kernels {
		a := agents[min(i, len(agents)-1)]
		p.Kernels = append(p.Kernels, framework.KernelPlacement{Kernel: k.ID, Agent: a, Slots: k.Requested.Clone()})
	}
	return p
}

func (f *fixture) apply(group string, ps ...framework.Placement) store.ApplyResult {
	f.t.Helper()
	res, err := f.s.ApplyPlan(f.ctx, framework.Plan{Group: group, Placements: ps}, at(10))
	f.must(err, "apply plan")
	return res
}

// schedule places the session on the agents and fails unless it applied.
func (f *fixture) schedule(group string, s store.SessionWithKernels, agents ...domain.AgentID) {
	f.t.Helper()
	res := f.apply(group, placement(s, agents...))
	if len(res.Applied) != 1 {
		f.t.Fatalf("placing %s on %v: rejected %+v", s.Session.ID, agents, res.Rejected)
	}
}

// advance walks a session through its lifecycle to the status, as the
// coordinator would on success, one transition at a time.
func (f *fixture) advance(id domain.SessionID, to domain.SessionStatus) {
	f.t.Helper()
	steps := []struct {
		from domain.SessionStatus
		to   domain.Transition
	}{
		{domain.SessionScheduled, domain.Transition{Session: domain.SessionPreparing, Kernel: domain.KernelPreparing}},
		{domain.SessionPreparing, domain.Transition{Session: domain.SessionPrepared, Kernel: domain.KernelPrepared}},
		{domain.SessionPrepared, domain.Transition{Session: domain.SessionCreating, Kernel: domain.KernelCreating}},
		{domain.SessionCreating, domain.Transition{Session: domain.SessionRunning, Kernel: domain.KernelRunning}},
		{domain.SessionRunning, domain.Transition{Session: domain.SessionTerminating, Kernel: domain.KernelTerminating}},
	}
	for _, st := range steps {
		if f.get(id).Session.Status == to {
			return
		}
		got, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{id}, []domain.SessionStatus{st.from}, st.to, "", at(20))
		f.must(err, "advance %s to %s", id, st.to.Session)
		if len(got) != 1 {
			f.t.Fatalf("advance %s from %s: session is %s", id, st.from, f.get(id).Session.Status)
		}
	}
	if got := f.get(id).Session.Status; got != to {
		f.t.Fatalf("advance %s: stuck at %s, want %s", id, got, to)
	}
}

// invariant checks the store's invariants and fails the test on any
// breach.
func (f *fixture) invariant() {
	f.t.Helper()
	if err := CheckInvariants(f.ctx, f.s); err != nil {
		f.t.Fatal(err)
	}
}

// wantIDs fails t unless rows, by id, are want in order. An empty list is
// nil, so a row that wants none writes nil.
func wantIDs[R, ID any](t *testing.T, rows []R, id func(R) ID, want []ID) {
	t.Helper()
	if diff := cmp.Diff(want, idsOf(rows, id)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// idsOf returns the rows' ids in order; nil for no rows.
func idsOf[R, ID any](rows []R, id func(R) ID) []ID {
	var out []ID
	for _, r := range rows {
		out = append(out, id(r))
	}
	return out
}

// wantHeld checks that the agent holds exactly occupied in kernels
// kernels.
func (f *fixture) wantHeld(id domain.AgentID, occupied domain.Vec, kernels int) {
	f.t.Helper()
	a := f.getAgent(id)
	if diff := cmp.Diff(occupied, a.Occupied); diff != "" || a.KernelCount != kernels {
		f.t.Errorf("agent %s: %d kernels (want %d), occupied (-want +got):\n%s", id, a.KernelCount, kernels, diff)
	}
}

func sessionID(s domain.Session) domain.SessionID { return s.ID }
func kernelID(k domain.Kernel) domain.KernelID    { return k.ID }
func agentID(a domain.Agent) domain.AgentID       { return a.ID }

// pages lists the sessions filter matches a page at a time, each page
// after the last id of the one before, limit(page) long. It stops at ten
// pages: a store that repeats a page would otherwise never end the test.
func (f *fixture) pages(filter store.SessionFilter, limit func(page int) int) []domain.SessionID {
	f.t.Helper()
	var got []domain.SessionID
	for page := 0; page < 10; page++ {
		filter.Limit = limit(page)
		list, err := f.s.ListSessions(f.ctx, filter)
		f.must(err, "page %d", page)
		if len(list) == 0 {
			break
		}
		got = append(got, idsOf(list, sessionID)...)
		filter.After = list[len(list)-1].ID
	}
	return got
}
