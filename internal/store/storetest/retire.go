package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testRetireAgent: only a LOST agent that holds no kernel is retired, and
// each refusal says why and changes nothing. The retired agent is
// TERMINATED under a new epoch, so its old incarnation is told to
// register again, and a registration brings it back as a fresh agent.
func testRetireAgent(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8"})
	s := f.session("s1", "g", "alice", 1, []string{"cpu", "2"})
	f.schedule("g", s, "a1")
	f.advance(s.Session.ID, domain.SessionRunning)
	f.must(f.s.DrainAgent(f.ctx, "a1", at(11), time.Time{}), "drain")

	refused := func(what string, want store.AgentRetireError) {
		t.Helper()
		before := f.getAgent("a1")
		_, err := f.s.RetireAgent(f.ctx, "a1")
		var re *store.AgentRetireError
		if !errors.As(err, &re) || !errors.Is(err, store.ErrConflict) || *re != want {
			t.Fatalf("%s: retire = %v, want %+v", what, err, want)
		}
		if after := f.getAgent("a1"); after.Status != before.Status || after.Epoch != before.Epoch {
			t.Fatalf("%s: refused retire changed the agent from %s@%d to %s@%d", what,
				before.Status, before.Epoch, after.Status, after.Epoch)
		}
	}
	_, err := f.s.RetireAgent(f.ctx, "ghost")
	wantErr(t, err, store.ErrNotFound, "retire an unknown agent")
	refused("ALIVE", store.AgentRetireError{Agent: "a1", Status: domain.AgentAlive})
	f.must(f.s.SetAgentStatus(f.ctx, "a1", domain.AgentLost), "lose a1")
	refused("LOST with a running kernel", store.AgentRetireError{Agent: "a1", Status: domain.AgentLost, Kernels: 1})
	f.transition([]domain.SessionID{s.Session.ID}, []domain.SessionStatus{domain.SessionRunning},
		domain.Transition{Session: domain.SessionTerminating, Kernel: domain.KernelTerminating})
	refused("LOST with a terminating kernel", store.AgentRetireError{Agent: "a1", Status: domain.AgentLost, Kernels: 1})
	f.transition([]domain.SessionID{s.Session.ID}, []domain.SessionStatus{domain.SessionTerminating},
		domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated})

	epoch := f.getAgent("a1").Epoch
	got, err := f.s.RetireAgent(f.ctx, "a1")
	f.must(err, "retire a LOST agent without kernels")
	if got.ID != "a1" || got.Status != domain.AgentTerminated || got.Epoch != epoch+1 || !got.Schedulable {
		t.Errorf("retired agent %s: %s, epoch %d, schedulable %v; want TERMINATED, epoch %d, schedulable",
			got.ID, got.Status, got.Epoch, got.Schedulable, epoch+1)
	}
	if got := f.getAgent("a1"); got.Status != domain.AgentTerminated {
		t.Errorf("stored status %s, want TERMINATED", got.Status)
	}
	drains, err := f.s.ListAgentDrains(f.ctx)
	f.must(err, "list drains")
	if len(drains) != 0 {
		t.Errorf("drains after retire: %+v, want none", drains)
	}
	refused("TERMINATED", store.AgentRetireError{Agent: "a1", Status: domain.AgentTerminated})

	wantErr(t, f.s.Heartbeat(f.ctx, "a1", epoch, at(60)), store.ErrGuardFailed, "heartbeat of the retired incarnation")
	a := f.getAgent("a1")
	_, err = f.s.RegisterAgent(f.ctx, a, at(61), store.RegisterGuard{Epoch: epoch})
	wantErr(t, err, store.ErrGuardFailed, "registration judged before the retire")
	back, err := f.s.RegisterAgent(f.ctx, a, at(62), store.RegisterGuard{Epoch: epoch + 1})
	f.must(err, "register the retired agent again")
	if back.Status != domain.AgentAlive || back.Epoch != epoch+2 || !back.Schedulable {
		t.Errorf("agent back: %s, epoch %d, schedulable %v; want ALIVE, epoch %d, schedulable",
			back.Status, back.Epoch, back.Schedulable, epoch+2)
	}
	f.invariant()
}

// testRetireRacesRegistration: the agent registering again while another
// store instance retires it. Either the registration came first and the
// retire is refused (the agent is ALIVE), or the retire came first and the
// registration, guarded by the epoch it judged, is refused; never are both
// let through, which would leave a live agent TERMINATED.
func testRetireRacesRegistration(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	other := f.open(Options{Registry: f.reg})
	for i := range 12 {
		id := domain.AgentID(fmt.Sprintf("a%02d", i))
		a := f.agent(string(id), "g", []string{"cpu", "8"})
		f.must(f.s.SetAgentStatus(f.ctx, id, domain.AgentLost), "lose %s", id)
		var regErr, retErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, regErr = f.s.RegisterAgent(f.ctx, a, at(2), store.RegisterGuard{Epoch: a.Epoch})
		})
		wg.Go(func() { _, retErr = other.RetireAgent(f.ctx, id) })
		wg.Wait()
		final := f.getAgent(id).Status
		var re *store.AgentRetireError
		switch {
		case regErr == nil && errors.As(retErr, &re) && re.Status == domain.AgentAlive && final == domain.AgentAlive:
		case retErr == nil && errors.Is(regErr, store.ErrGuardFailed) && final == domain.AgentTerminated:
		default:
			t.Fatalf("%s: registration %v, retire %v, agent %s; want exactly one to win", id, regErr, retErr, final)
		}
	}
	f.invariant()
}
