package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

func testResourceGroups(t *testing.T, e Engine) {
	f := newFixture(t, e)
	gpu := f.group("gpu", func(g *domain.ResourceGroup) {
		g.State, g.Sequencer, g.Selector, g.HeadOfLine = domain.GroupDraining, "drf", "round-robin", domain.HOLBlock
		g.MaxRetries = 7
		g.Timeouts = domain.Timeouts{Pending: 90 * time.Second, Scheduled: time.Minute, Preparing: 1500 * time.Millisecond,
			Prepared: time.Hour, Creating: 3 * time.Nanosecond, Terminating: 5 * time.Minute}
		g.AllowedTypes = []domain.SessionType{domain.TypeBatch, domain.TypeInference}
	})
	cpu := f.group("cpu")

	got, err := f.s.GetResourceGroup(f.ctx, "gpu")
	f.must(err, "get gpu")
	if diff := cmp.Diff(gpu, got); diff != "" {
		t.Errorf("gpu round trip (-want +got):\n%s", diff)
	}
	all, err := f.s.ListResourceGroups(f.ctx)
	f.must(err, "list")
	if diff := cmp.Diff([]domain.ResourceGroup{cpu, gpu}, all); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	// Head-of-line reserve is stored as skip plus a flag (migration
	// 00070); it and the reservation depth read back as written.
	reserve := f.group("reserve", func(g *domain.ResourceGroup) {
		g.HeadOfLine, g.ReservationDepth = domain.HOLReserve, 6
	})
	got, err = f.s.GetResourceGroup(f.ctx, "reserve")
	f.must(err, "get reserve")
	if diff := cmp.Diff(reserve, got); diff != "" {
		t.Errorf("reserve round trip (-want +got):\n%s", diff)
	}
	reserve.HeadOfLine = domain.HOLBlock
	f.must(f.s.PutResourceGroup(f.ctx, reserve), "reserve back to block")
	if got, err = f.s.GetResourceGroup(f.ctx, "reserve"); err != nil || got.HeadOfLine != domain.HOLBlock {
		t.Errorf("after setting block: head of line %q (%v), want block", got.HeadOfLine, err)
	}

	// Replacing the configuration keeps the round-robin cursor the
	// scheduler saved.
	f.agent("a1", "cpu", []string{"cpu", "1"})
	_, err = f.s.ApplyPlan(f.ctx, framework.Plan{Group: "cpu", Cursor: "a1"}, at(2))
	f.must(err, "save cursor")
	cpu.State = domain.GroupStopped
	f.must(f.s.PutResourceGroup(f.ctx, cpu), "update cpu")
	snap, err := f.s.LoadSnapshot(f.ctx, "cpu", at(3))
	f.must(err, "snapshot")
	if snap.Cursor != "a1" || snap.Group.State != domain.GroupStopped {
		t.Errorf("after update: cursor %q state %s, want a1 STOPPED", snap.Cursor, snap.Group.State)
	}

	_, err = f.s.GetResourceGroup(f.ctx, "nope")
	wantErr(t, err, store.ErrNotFound, "get missing group")
	bad := cpu
	bad.MaxRetries = -1
	wantErr(t, f.s.PutResourceGroup(f.ctx, bad), store.ErrInvalid, "negative max retries")
	bad = cpu
	bad.HeadOfLine = "sometimes"
	wantErr(t, f.s.PutResourceGroup(f.ctx, bad), store.ErrInvalid, "unknown head-of-line policy")
	bad = cpu
	bad.ReservationDepth = -1
	wantErr(t, f.s.PutResourceGroup(f.ctx, bad), store.ErrInvalid, "negative reservation depth")
	bad = cpu
	bad.State = 0
	wantErr(t, f.s.PutResourceGroup(f.ctx, bad), store.ErrInvalid, "unset state")
	f.invariant()
}

// A group's default and minimum slots for kernel requests round-trip
// through every read of the group; a group that sets neither reads back
// nil for both, as it was written.
func testGroupSlots(t *testing.T, e Engine) {
	f := newFixture(t, e)
	gpu := f.group("gpu", func(g *domain.ResourceGroup) {
		g.DefaultSlots = f.slots("cpu", "0.5", "mem", "2g", "cuda.shares", "0.25")
		g.MinSlots = f.slots("cpu", "0.1", "mem", "128m")
	})
	plain := f.group("plain")

	for _, name := range []string{"gpu", "plain"} {
		got, err := f.s.GetResourceGroup(f.ctx, name)
		f.must(err, "get %s", name)
		want := map[string]domain.ResourceGroup{"gpu": gpu, "plain": plain}[name]
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", name, diff)
		}
	}
	if got, err := f.s.GetResourceGroup(f.ctx, "plain"); err == nil && (got.DefaultSlots != nil || got.MinSlots != nil) {
		t.Errorf("plain group reads default %v min %v, want nil and nil", got.DefaultSlots, got.MinSlots)
	}
	all, err := f.s.ListResourceGroups(f.ctx)
	f.must(err, "list")
	if diff := cmp.Diff([]domain.ResourceGroup{gpu, plain}, all); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	snap, err := f.s.LoadSnapshot(f.ctx, "gpu", at(1))
	f.must(err, "snapshot")
	if diff := cmp.Diff(gpu, snap.Group); diff != "" {
		t.Errorf("snapshot group (-want +got):\n%s", diff)
	}

	// Replacing the configuration replaces the vectors too; all-zero ones
	// read back as nil.
	gpu.DefaultSlots, gpu.MinSlots = f.reg.NewVec(), nil
	f.must(f.s.PutResourceGroup(f.ctx, gpu), "clear gpu slots")
	got, err := f.s.GetResourceGroup(f.ctx, "gpu")
	f.must(err, "get cleared gpu")
	if got.DefaultSlots != nil || got.MinSlots != nil {
		t.Errorf("cleared group reads default %v min %v, want nil and nil", got.DefaultSlots, got.MinSlots)
	}

	bad := plain
	bad.MinSlots = make(domain.Vec, f.reg.Len()+1)
	wantErr(t, f.s.PutResourceGroup(f.ctx, bad), store.ErrInvalid, "minimum slots longer than the registry")
	bad = plain
	bad.DefaultSlots = f.reg.NewVec()
	bad.DefaultSlots[0] = -1
	wantErr(t, f.s.PutResourceGroup(f.ctx, bad), store.ErrInvalid, "negative default slot")
	f.invariant()
}

func testAgents(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.group("g2")
	a := domain.Agent{
		ID: "a1", ResourceGroup: "g1", Address: "10.0.0.1:6001", Architecture: "aarch64", Runtime: "process",
		Schedulable: true, Capacity: f.slots("cpu", "8", "mem", "32g", "cuda.shares", "2.5"), MaxKernels: 4,
		Images: []string{"sleep", "python:3.13"}, Labels: map[string]string{"zone": "b"},
		Catalog: []string{"exit:*", "sleep"},
		// Ignored on registration: a new agent is ALIVE, holds nothing and
		// starts at epoch 1.
		Status: domain.AgentLost, Occupied: f.slots("cpu", "1"), KernelCount: 3, Epoch: 9,
	}
	got, err := f.s.RegisterAgent(f.ctx, a, at(1))
	f.must(err, "register")
	want := a
	want.Status, want.Occupied, want.KernelCount, want.Epoch, want.LastHeartbeat = domain.AgentAlive, f.reg.NewVec(), 0, 1, at(1)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("register (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, f.getAgent("a1")); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}

	// Occupy something so re-registration can be seen to keep it.
	s := f.session("s1", "g1", "alice", 1, []string{"cpu", "2"})
	f.schedule("g1", s, "a1")
	f.must(f.s.SetAgentSchedulable(f.ctx, "a1", false), "cordon")
	f.must(f.s.SetAgentStatus(f.ctx, "a1", domain.AgentLost), "lose")

	a.Capacity = f.slots("cpu", "16", "mem", "64g")
	a.Address = "10.0.0.2:6001"
	a.KernelAddress = "10.8.0.2"      // and its kernels moved with it
	a.Catalog = []string{"http-echo"} // a new build of the agent knows other images
	a.Schedulable = true              // a restarting agent does not lift a cordon
	got, err = f.s.RegisterAgent(f.ctx, a, at(5))
	f.must(err, "re-register")
	want.Capacity, want.Address, want.LastHeartbeat, want.Catalog = a.Capacity, a.Address, at(5), a.Catalog
	want.KernelAddress = a.KernelAddress
	want.Epoch, want.Schedulable, want.Status = 2, false, domain.AgentAlive
	want.Occupied, want.KernelCount = f.slots("cpu", "2"), 1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("re-register (-want +got):\n%s", diff)
	}

	wantErr(t, f.s.Heartbeat(f.ctx, "a1", 1, at(6)), store.ErrGuardFailed, "heartbeat from old epoch")
	f.must(f.s.Heartbeat(f.ctx, "a1", 2, at(7)), "heartbeat")
	if hb := f.getAgent("a1").LastHeartbeat; !hb.Equal(at(7)) {
		t.Errorf("last heartbeat %v, want %v", hb, at(7))
	}
	// Declared LOST, a1's heartbeats are refused until it registers: it
	// would otherwise stay LOST while heard from, never ALIVE again.
	f.must(f.s.SetAgentStatus(f.ctx, "a1", domain.AgentLost), "lose again")
	wantErr(t, f.s.Heartbeat(f.ctx, "a1", 2, at(8)), store.ErrGuardFailed, "heartbeat of a LOST agent")
	if hb := f.getAgent("a1").LastHeartbeat; !hb.Equal(at(7)) {
		t.Errorf("a LOST agent's heartbeat moved its last heartbeat to %v", hb)
	}
	f.must(f.s.SetAgentStatus(f.ctx, "a1", domain.AgentAlive), "alive again")
	wantErr(t, f.s.Heartbeat(f.ctx, "ghost", 1, at(7)), store.ErrNotFound, "heartbeat of unknown agent")
	wantErr(t, f.s.SetAgentStatus(f.ctx, "ghost", domain.AgentLost), store.ErrNotFound, "status of unknown agent")
	wantErr(t, f.s.SetAgentSchedulable(f.ctx, "ghost", true), store.ErrNotFound, "cordon unknown agent")
	wantErr(t, f.s.SetAgentStatus(f.ctx, "a1", 0), store.ErrInvalid, "unset status")
	_, err = f.s.GetAgent(f.ctx, "ghost")
	wantErr(t, err, store.ErrNotFound, "get unknown agent")
	_, err = f.s.RegisterAgent(f.ctx, domain.Agent{ID: "a9", ResourceGroup: "nowhere", Capacity: f.slots("cpu", "1")}, at(1))
	wantErr(t, err, store.ErrNotFound, "agent in unknown group")
	_, err = f.s.RegisterAgent(f.ctx, domain.Agent{ID: "a9", ResourceGroup: "g1", Capacity: make(domain.Vec, f.reg.Len()+1)}, at(1))
	wantErr(t, err, store.ErrInvalid, "capacity vector longer than the registry")

	f.agent("a2", "g2", []string{"cpu", "1"})
	f.agent("a3", "g1", []string{"cpu", "1"})
	f.must(f.s.SetAgentStatus(f.ctx, "a3", domain.AgentTerminated), "terminate a3")
	for _, tc := range []struct {
		name   string
		filter store.AgentFilter
		want   []domain.AgentID
	}{
		{"all", store.AgentFilter{}, []domain.AgentID{"a1", "a2", "a3"}},
		{"group", store.AgentFilter{Group: "g1"}, []domain.AgentID{"a1", "a3"}},
		{"status", store.AgentFilter{Statuses: []domain.AgentStatus{domain.AgentAlive}}, []domain.AgentID{"a1", "a2"}},
		{"both", store.AgentFilter{Group: "g1", Statuses: []domain.AgentStatus{domain.AgentTerminated}}, []domain.AgentID{"a3"}},
		{"ids", store.AgentFilter{IDs: []domain.AgentID{"a3", "a1", "ghost"}}, []domain.AgentID{"a1", "a3"}},
		{"ids and group", store.AgentFilter{IDs: []domain.AgentID{"a2", "a3"}, Group: "g1"}, []domain.AgentID{"a3"}},
		// a1 was last heard from at 7, a2 and a3 at 0.
		{"silent", store.AgentFilter{SilentSince: at(7)}, []domain.AgentID{"a2", "a3"}},
		{"silent, all", store.AgentFilter{SilentSince: at(8)}, []domain.AgentID{"a1", "a2", "a3"}},
		{"silent and alive", store.AgentFilter{SilentSince: at(5), Statuses: []domain.AgentStatus{domain.AgentAlive}},
			[]domain.AgentID{"a2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := f.s.ListAgents(f.ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			wantIDs(t, list, agentID, tc.want)
		})
	}
	f.invariant()
}

func testUsers(t *testing.T, e Engine) {
	f := newFixture(t, e)
	alice := store.User{ID: "u1", Name: "alice", Role: store.RoleAdmin, Project: "p1", Domain: "d1", CreatedAt: at(1)}
	hash := []byte(strings.Repeat("a", 32))
	f.must(f.s.CreateUser(f.ctx, alice, hash), "create alice")
	got, err := f.s.UserByTokenHash(f.ctx, hash)
	f.must(err, "lookup")
	if diff := cmp.Diff(alice, got); diff != "" {
		t.Errorf("lookup (-want +got):\n%s", diff)
	}
	_, err = f.s.UserByTokenHash(f.ctx, []byte(strings.Repeat("b", 32)))
	wantErr(t, err, store.ErrNotFound, "unknown token")

	bob := store.User{ID: "u2", Name: "alice", Role: store.RoleUser, CreatedAt: at(2)}
	wantErr(t, f.s.CreateUser(f.ctx, bob, []byte(strings.Repeat("c", 32))), store.ErrConflict, "duplicate name")
	bob.Name = "bob"
	wantErr(t, f.s.CreateUser(f.ctx, bob, hash), store.ErrConflict, "duplicate token hash")
	// The failed attempt left nothing behind: the name is free.
	_, err = f.s.UserByTokenHash(f.ctx, []byte(strings.Repeat("c", 32)))
	wantErr(t, err, store.ErrNotFound, "token of the refused user")
	wantErr(t, f.s.CreateUser(f.ctx, bob, []byte("short")), store.ErrInvalid, "a token itself, not a hash")
	bob.Role = "root"
	wantErr(t, f.s.CreateUser(f.ctx, bob, []byte(strings.Repeat("d", 32))), store.ErrInvalid, "unknown role")
	bob.Role = store.RoleUser
	f.must(f.s.CreateUser(f.ctx, bob, []byte(strings.Repeat("d", 32))), "create bob")
	users, err := f.s.ListUsers(f.ctx)
	f.must(err, "list users")
	if diff := cmp.Diff([]store.User{alice, bob}, users); diff != "" {
		t.Errorf("users by name (-want +got):\n%s", diff)
	}

	// A new token replaces every one the user had; others' stay.
	fresh := []byte(strings.Repeat("e", 32))
	// It may expire: the store keeps the expiry and hands it back with
	// the user; a token made without one never expires.
	f.must(f.s.ReplaceTokens(f.ctx, "u1", fresh, at(3), at(30)), "replace alice's tokens")
	_, err = f.s.UserByTokenHash(f.ctx, hash)
	wantErr(t, err, store.ErrNotFound, "alice's replaced token")
	if got, err := f.s.UserByTokenHash(f.ctx, fresh); err != nil || got.ID != "u1" || !got.TokenExpiresAt.Equal(at(30)) {
		t.Errorf("alice's new token: %+v, %v; want u1 expiring at %s", got, err, at(30))
	}
	if got, err := f.s.UserByTokenHash(f.ctx, []byte(strings.Repeat("d", 32))); err != nil || got.ID != "u2" ||
		!got.TokenExpiresAt.IsZero() {
		t.Errorf("bob's token after alice's replacement: %+v, %v; want u2, never expiring", got, err)
	}
	wantErr(t, f.s.ReplaceTokens(f.ctx, "nobody", []byte(strings.Repeat("f", 32)), at(3), time.Time{}), store.ErrNotFound, "tokens of no user")
	wantErr(t, f.s.ReplaceTokens(f.ctx, "u2", fresh, at(3), time.Time{}), store.ErrConflict, "another user's token hash")
	if got, err := f.s.UserByTokenHash(f.ctx, []byte(strings.Repeat("d", 32))); err != nil || got.ID != "u2" {
		t.Errorf("bob's token after a refused replacement: %+v, %v", got, err)
	}
	f.invariant()
}

func testPolicies(t *testing.T, e Engine) {
	f := newFixture(t, e)
	limits := domain.Unlimited(f.reg.Len())
	cpu, _ := f.reg.Lookup("cpu")
	gpu, _ := f.reg.Lookup("cuda.device")
	limits[cpu] = 4000
	limits[gpu] = 0 // zero is a limit, not "unlimited"
	p := domain.Policy{Scope: domain.ScopeUser, Name: "alice", MaxSlots: limits, MaxConcurrentSessions: 3, MaxPendingSessions: 10}
	f.must(f.s.PutPolicy(f.ctx, p), "put")
	got, err := f.s.GetPolicy(f.ctx, domain.ScopeUser, "alice")
	f.must(err, "get")
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	p.MaxSlots = domain.Unlimited(f.reg.Len())
	p.MaxConcurrentSessions = 0
	f.must(f.s.PutPolicy(f.ctx, p), "replace")
	got, err = f.s.GetPolicy(f.ctx, domain.ScopeUser, "alice")
	f.must(err, "get replaced")
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("replaced (-want +got):\n%s", diff)
	}
	_, err = f.s.GetPolicy(f.ctx, domain.ScopeProject, "alice")
	wantErr(t, err, store.ErrNotFound, "same name, other scope")
	p.Scope = "team"
	wantErr(t, f.s.PutPolicy(f.ctx, p), store.ErrInvalid, "unknown scope")
	p.Scope, p.MaxPendingSessions = domain.ScopeDomain, -1
	wantErr(t, f.s.PutPolicy(f.ctx, p), store.ErrInvalid, "negative cap")
	f.invariant()
}

// testRegisterGuard: a guarded registration happens only while the agent
// is as its caller saw it. Registrations racing from two store instances
// (two managers) with the same guard let exactly one in: the other finds
// the epoch moved and changes nothing.
func testRegisterGuard(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	a := domain.Agent{ID: "a1", ResourceGroup: "g1", Address: "10.0.0.1:6001", Capacity: f.slots("cpu", "4")}
	got, err := f.s.RegisterAgent(f.ctx, a, at(1), store.RegisterGuard{Epoch: 0})
	f.must(err, "first registration, guarded as new")
	if got.Epoch != 1 {
		t.Fatalf("epoch %d, want 1", got.Epoch)
	}
	_, err = f.s.RegisterAgent(f.ctx, a, at(2), store.RegisterGuard{Epoch: 0})
	wantErr(t, err, store.ErrGuardFailed, "a registration that expected no agent")
	if got := f.getAgent("a1"); got.Epoch != 1 || !got.LastHeartbeat.Equal(at(1)) {
		t.Errorf("after a refused registration: epoch %d, heartbeat %v; want 1 and unchanged", got.Epoch, got.LastHeartbeat)
	}

	stores := []store.Store{f.s, f.open(Options{Registry: f.reg})}
	const racers = 8
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			b := a
			b.Address = fmt.Sprintf("10.0.1.%d:6001", i)
			_, errs[i] = stores[i%2].RegisterAgent(f.ctx, b, at(3), store.RegisterGuard{Epoch: 1})
		})
	}
	wg.Wait()
	won := winners(t, "racer", errs, store.ErrGuardFailed)
	if got := f.getAgent("a1"); won != 1 || got.Epoch != 2 {
		t.Errorf("%d registrations won, epoch %d; want exactly 1 and epoch 2", won, got.Epoch)
	}
	f.invariant()
}
