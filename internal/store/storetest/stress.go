package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testConcurrentAppliers has two store instances, each with its own
// connections (two manager replicas), apply 1,000 conflicting plans in
// total to the same few agents, while also sending sessions back to
// PENDING and ending them. Nothing may be booked beyond an agent's
// capacity or kernel cap at any point, the books must balance at the end,
// and a session may be applied only once per time it was PENDING.
func testConcurrentAppliers(t *testing.T, e Engine) {
	f := newFixture(t, e)
	agents, pool := raceSetup(f)
	stores := []store.Store{f.s, f.open(Options{Registry: f.reg})}
	tally := &raceTally{applied: map[domain.SessionID]int{}, repended: map[domain.SessionID]int{}}
	const total = 1000
	var wg sync.WaitGroup
	for w, st := range stores {
		wg.Go(func() {
			raceWriter(t, f, w, st, total/len(stores), agents, pool, tally)
		})
	}
	wg.Wait()
	f.invariant()
	checkRaceBooks(t, f, pool, tally)
}

// raceSetup makes group race with six agents, two of them capped at
// three kernels, and 120 sessions, some of them two-kernel gangs.
func raceSetup(f *fixture) ([]domain.AgentID, []store.SessionWithKernels) {
	f.group("race")
	var agents []domain.AgentID
	for i := range 6 {
		id := domain.AgentID(fmt.Sprintf("r-a%d", i))
		agents = append(agents, id)
		f.agent(string(id), "race", []string{"cpu", "4", "mem", "8g"}, func(a *domain.Agent) {
			if i >= 4 {
				a.MaxKernels = 3
			}
		})
	}
	var pool []store.SessionWithKernels
	for i := range 120 {
		n, cpu := 1, "1"
		switch {
		case i%6 == 0:
			n = 2 // a gang: both kernels or neither
		case i%2 == 0:
			cpu = "2"
		}
		pool = append(pool, f.session(fmt.Sprintf("r-s%03d", i), "race", fmt.Sprintf("u%d", i%5), n, []string{"cpu", cpu, "mem", "1g"}))
	}
	return agents, pool
}

// raceTally counts, across writers, how often each session was applied
// and sent back to PENDING.
type raceTally struct {
	mu                sync.Mutex
	applied, repended map[domain.SessionID]int
}

func (r *raceTally) add(m map[domain.SessionID]int, ids []domain.SessionID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		m[id]++
	}
}

// raceWriter is one replica: rounds random plans through st, sends one
// of its sessions back to PENDING after each, ends one every 20th round,
// and every 10th checks that no agent it reads is over-committed.
func raceWriter(t *testing.T, f *fixture, w int, st store.Store, rounds int, agents []domain.AgentID,
	pool []store.SessionWithKernels, tally *raceTally) {
	rng := rand.New(rand.NewPCG(uint64(w)+1, 42))
	var mine []domain.SessionID
	for i := range rounds {
		plan := framework.Plan{Group: "race", Cursor: agents[rng.IntN(len(agents))]}
		for range 1 + rng.IntN(3) {
			s := pool[rng.IntN(len(pool))]
			var on []domain.AgentID
			for range s.Kernels {
				on = append(on, agents[rng.IntN(len(agents))])
			}
			plan.Placements = append(plan.Placements, placement(s, on...))
		}
		res, err := st.ApplyPlan(f.ctx, plan, at(100))
		if err != nil {
			t.Errorf("writer %d: apply: %v", w, err)
			return
		}
		tally.add(tally.applied, res.Applied)
		mine = append(mine, res.Applied...)
		if len(mine) > 0 {
			// Make room and keep the pool cycling: most rounds send a
			// session back to PENDING, a few end one for good.
			back := mine[rng.IntN(len(mine))]
			got, err := st.TransitionSessions(f.ctx, []domain.SessionID{back}, []domain.SessionStatus{domain.SessionScheduled},
				domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}, "", at(101))
			if err != nil {
				t.Errorf("writer %d: re-pend: %v", w, err)
				return
			}
			tally.add(tally.repended, got)
		}
		if i%20 == 19 && len(mine) > 0 {
			end := mine[rng.IntN(len(mine))]
			if _, err := st.TransitionSessions(f.ctx, []domain.SessionID{end}, []domain.SessionStatus{domain.SessionScheduled},
				domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}, "", at(102)); err != nil {
				t.Errorf("writer %d: end: %v", w, err)
				return
			}
		}
		if i%10 == 0 && !checkNotOverCommitted(t, f, w, st) {
			return
		}
	}
}

// checkNotOverCommitted: what another replica can read must never be
// over-committed. False when the agents could not be read.
func checkNotOverCommitted(t *testing.T, f *fixture, w int, st store.Store) bool {
	list, err := st.ListAgents(f.ctx, store.AgentFilter{Group: "race"})
	if err != nil {
		t.Errorf("writer %d: list agents: %v", w, err)
		return false
	}
	for _, a := range list {
		if _, fits := domain.Fits(a.Occupied, a.Capacity); !fits || (a.MaxKernels > 0 && a.KernelCount > a.MaxKernels) {
			t.Errorf("writer %d: agent %s over-committed: %v of %v, %d kernels", w, a.ID, a.Occupied, a.Capacity, a.KernelCount)
		}
	}
	return true
}

// checkRaceBooks: each session was applied once per time it was
// PENDING, and something was applied at all.
func checkRaceBooks(t *testing.T, f *fixture, pool []store.SessionWithKernels, tally *raceTally) {
	t.Helper()
	placed := 0
	for _, s := range pool {
		id := s.Session.ID
		st := f.get(id).Session.Status
		n, back := tally.applied[id], tally.repended[id]
		placed += n
		ok := false
		switch st {
		case domain.SessionPending:
			ok = n == back
		case domain.SessionScheduled, domain.SessionTerminated:
			ok = n == back+1
		}
		if !ok {
			t.Errorf("session %s is %s after %d applications and %d returns to PENDING", id, st, n, back)
		}
	}
	if placed == 0 {
		t.Errorf("no placement was ever applied: the test exercised nothing")
	}
	back := 0
	for _, n := range tally.repended {
		back += n
	}
	t.Logf("%d placements applied, %d returns to PENDING", placed, back)
}

var errInjected = errors.New("injected fault")

// testAbortedApply interrupts plan application at random points — the
// context is cancelled from inside the transaction through the engine's
// test-only fault hook, a fault is injected there, or a random short
// deadline fires — and checks that each session's placement is there
// whole or not at all, and that the books balance after every attempt.
func testAbortedApply(t *testing.T, e Engine) {
	f := newFixture(t, e)
	var hook atomic.Pointer[func(string) error]
	faulty := f.open(Options{Registry: f.reg, Fault: func(point string) error {
		if h := hook.Load(); h != nil {
			return (*h)(point)
		}
		return nil
	}})
	f.group("crash")
	agents := []domain.AgentID{"c-a0", "c-a1", "c-a2"}
	for _, id := range agents {
		f.agent(string(id), "crash", []string{"cpu", "6"})
	}
	points := []string{store.FaultRead, store.FaultSessions, store.FaultKernels, store.FaultAgents, store.FaultCommit}
	rng := rand.New(rand.NewPCG(7, 7))
	aborted := 0
	for i := range 90 {
		var plan framework.Plan
		plan.Group = "crash"
		for j, n := range []int{1, 1, 2} {
			s := f.session(fmt.Sprintf("c%02d-%d", i, j), "crash", "alice", n, []string{"cpu", "1"})
			plan.Placements = append(plan.Placements, placement(s, agents[rng.IntN(3)], agents[rng.IntN(3)]))
		}
		ctx, cancel := context.WithCancel(f.ctx)
		mode := i % 3
		point := points[rng.IntN(len(points))]
		switch mode {
		case 0:
			h := func(p string) error {
				if p == point {
					cancel()
				}
				return nil
			}
			hook.Store(&h)
		case 1:
			h := func(p string) error {
				if p == point {
					return errInjected
				}
				return nil
			}
			hook.Store(&h)
		case 2:
			ctx, cancel = context.WithTimeout(f.ctx, time.Duration(rng.IntN(3000))*time.Microsecond)
		}
		res, err := faulty.ApplyPlan(ctx, plan, at(100))
		cancel()
		hook.Store(nil)
		switch {
		case err == nil:
		case mode == 0 && !errors.Is(err, context.Canceled):
			t.Fatalf("attempt %d: cancelled at %s, got %v, want context.Canceled", i, point, err)
		case mode == 2 && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
			t.Fatalf("attempt %d: deadline, got %v", i, err)
		default:
			aborted++
		}
		applied := map[domain.SessionID]bool{}
		for _, id := range res.Applied {
			applied[id] = true
		}
		var toEnd []domain.SessionID
		for _, p := range plan.Placements {
			got := f.get(p.Session)
			switch got.Session.Status {
			case domain.SessionScheduled:
				toEnd = append(toEnd, p.Session)
				for k, kp := range p.Kernels {
					if got.Kernels[k].Status != domain.KernelScheduled || got.Kernels[k].Agent != kp.Agent {
						t.Errorf("attempt %d: %s is SCHEDULED but kernel %s is %s on %q", i, p.Session, kp.Kernel, got.Kernels[k].Status, got.Kernels[k].Agent)
					}
				}
				if err == nil && !applied[p.Session] {
					t.Errorf("attempt %d: %s is SCHEDULED but was not reported applied", i, p.Session)
				}
				if err != nil && mode != 2 {
					t.Errorf("attempt %d: %s was applied although the plan failed before commit (%s)", i, p.Session, point)
				}
			case domain.SessionPending:
				for _, k := range got.Kernels {
					if k.Status != domain.KernelPending || k.Agent != "" {
						t.Errorf("attempt %d: %s is PENDING but kernel %s is %s on %q", i, p.Session, k.ID, k.Status, k.Agent)
					}
				}
				if applied[p.Session] {
					t.Errorf("attempt %d: %s was reported applied but is PENDING", i, p.Session)
				}
			default:
				t.Errorf("attempt %d: %s is %s", i, p.Session, got.Session.Status)
			}
		}
		f.invariant()
		// End what was placed, so later attempts find room.
		f.transition(toEnd, []domain.SessionStatus{domain.SessionScheduled},
			domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated})
	}
	if aborted == 0 {
		t.Errorf("no attempt was aborted: the test exercised nothing")
	}
	// A fresh instance, as after a restart, finds the same consistent books.
	if err := CheckInvariants(f.ctx, f.open(Options{Registry: f.reg})); err != nil {
		t.Fatal(err)
	}
}
