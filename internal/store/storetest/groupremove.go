package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testRemoveResourceGroup: only a DRAINING group without live sessions and
// without ALIVE or LOST agents is removed, and each refusal names what is
// in the way. A removed group is invisible to reads, refuses sessions,
// agents, while its ended sessions stay readable; a put of its name
// creates the group again.
func testRemoveResourceGroup(t *testing.T, e Engine) {
	f := newFixture(t, e)
	g := f.group("g")
	f.group("other")
	f.agent("a1", "g", []string{"cpu", "8"})
	s1 := f.session("s1", "g", "alice", 1, []string{"cpu", "1"})

	refused := func(what string, want store.GroupRemoveError) {
		t.Helper()
		_, err := f.s.RemoveResourceGroup(f.ctx, "g", at(5))
		var re *store.GroupRemoveError
		if !errors.As(err, &re) || !errors.Is(err, store.ErrConflict) || *re != want {
			t.Fatalf("%s: remove = %v, want %+v", what, err, want)
		}
	}
	refused("ACTIVE", store.GroupRemoveError{Group: "g", State: domain.GroupActive})
	g.State = domain.GroupDraining
	f.must(f.s.PutResourceGroup(f.ctx, g), "drain")
	refused("a live session and an agent", store.GroupRemoveError{Group: "g", State: domain.GroupDraining, LiveSessions: 1, Agents: 1})
	_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{s1.Session.ID}, []domain.SessionStatus{domain.SessionPending},
		domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "cancelled", at(3))
	f.must(err, "cancel s1")
	f.must(f.s.SetAgentStatus(f.ctx, "a1", domain.AgentLost), "a1 lost")
	refused("a LOST agent", store.GroupRemoveError{Group: "g", State: domain.GroupDraining, Agents: 1})
	f.must(f.s.SetAgentStatus(f.ctx, "a1", domain.AgentTerminated), "a1 terminated")

	got, err := f.s.RemoveResourceGroup(f.ctx, "g", at(6))
	f.must(err, "remove")
	if got.Name != "g" || got.State != domain.GroupRemoved {
		t.Errorf("removed group %+v, want g REMOVED", got)
	}
	_, err = f.s.GetResourceGroup(f.ctx, "g")
	wantErr(t, err, store.ErrNotFound, "get a removed group")
	all, err := f.s.ListResourceGroups(f.ctx)
	f.must(err, "list")
	if len(all) != 1 || all[0].Name != "other" {
		t.Errorf("groups %+v, want only other", all)
	}
	_, err = f.s.RemoveResourceGroup(f.ctx, "g", at(7))
	wantErr(t, err, store.ErrNotFound, "remove twice")
	_, err = f.s.RemoveResourceGroup(f.ctx, "ghost", at(7))
	wantErr(t, err, store.ErrNotFound, "remove an unknown group")

	o := g
	o.Name, o.State = "other", domain.GroupRemoved
	wantErr(t, f.s.PutResourceGroup(f.ctx, o), store.ErrInvalid, "put state REMOVED")
	s, ks := f.build("s2", "g", "alice", 1, []string{"cpu", "1"})
	var ce *store.GroupClosedError
	if err := f.s.CreateSession(f.ctx, s, ks); !errors.As(err, &ce) || ce.State != domain.GroupRemoved {
		t.Errorf("create in a removed group: %v, want a GroupClosedError naming REMOVED", err)
	}
	_, err = f.s.RegisterAgent(f.ctx, domain.Agent{ID: "a2", ResourceGroup: "g", Address: "10.0.0.2:6001",
		Architecture: "x86_64", Runtime: "sim", Schedulable: true, Capacity: f.slots("cpu", "8")}, at(8))
	wantErr(t, err, store.ErrGroupRemoved, "register into a removed group")
	if _, err := f.s.GetAgent(f.ctx, "a2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused agent was stored: %v", err)
	}
	if s := f.get(s1.Session.ID).Session; s.ResourceGroup != "g" || s.Status != domain.SessionCancelled {
		t.Errorf("ended session after removal: %+v", s)
	}

	// Remove ends the group, not its name: a put creates it again, and the
	// new group takes sessions and agents.
	g.State = domain.GroupActive
	f.must(f.s.PutResourceGroup(f.ctx, g), "put a removed group's name")
	if back, err := f.s.GetResourceGroup(f.ctx, "g"); err != nil || back.State != domain.GroupActive {
		t.Errorf("the group created again reads %+v, %v; want it ACTIVE", back, err)
	}
	f.must(f.s.CreateSession(f.ctx, s, ks), "create in the group created again")
	_, err = f.s.RegisterAgent(f.ctx, domain.Agent{ID: "a2", ResourceGroup: "g", Address: "10.0.0.2:6001",
		Architecture: "x86_64", Runtime: "sim", Schedulable: true, Capacity: f.slots("cpu", "8")}, at(9))
	f.must(err, "register into the group created again")
	f.invariant()
}

// testRemoveRacesRegistration: an agent registering into a drained group
// while another store instance removes it: exactly one of the two wins,
// never both.
func testRemoveRacesRegistration(t *testing.T, e Engine) {
	f := newFixture(t, e)
	other := f.open(Options{Registry: f.reg})
	for i := range 12 {
		name := fmt.Sprintf("g%02d", i)
		f.group(name, func(g *domain.ResourceGroup) { g.State = domain.GroupDraining })
		var regErr, remErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, regErr = f.s.RegisterAgent(f.ctx, domain.Agent{ID: domain.AgentID("a-" + name), ResourceGroup: name,
				Address: "10.0.0.2:6001", Architecture: "x86_64", Runtime: "sim", Schedulable: true,
				Capacity: f.slots("cpu", "8")}, at(1))
		})
		wg.Go(func() { _, remErr = other.RemoveResourceGroup(f.ctx, name, at(1)) })
		wg.Wait()
		var re *store.GroupRemoveError
		switch {
		case regErr == nil && errors.As(remErr, &re) && re.Agents == 1:
		case remErr == nil && errors.Is(regErr, store.ErrGroupRemoved):
		default:
			t.Fatalf("%s: registration %v, removal %v; want exactly one to win", name, regErr, remErr)
		}
	}
	f.invariant()
}
