package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// withDevices gives a registered agent fake devices and the capacity they
// add up to, as an agent started with --devices does.
func withDevices(spec string) func(*domain.Agent) {
	return func(a *domain.Agent) {
		devs, err := domain.ParseFakeDevices(spec)
		if err != nil {
			panic(err)
		}
		a.Devices = devs
		reg := domain.DefaultRegistry()
		for i, q := range domain.DeviceCapacity(reg, devs) {
			if q != 0 {
				a.Capacity[i] = q
			}
		}
	}
}

func grant(dev string, index int, slot string, share domain.Quantity) domain.DeviceGrant {
	return domain.DeviceGrant{Device: dev, Index: index, Slot: slot, Share: share,
		Memory: int64(float64(16<<30) * float64(share) / 1000)}
}

// placeWith is placement with one kernel's grants set.
func placeWith(s store.SessionWithKernels, agent domain.AgentID, grants ...[]domain.DeviceGrant) framework.Placement {
	p := placement(s, agent)
	for i := range p.Kernels {
		if i < len(grants) {
			p.Kernels[i].Devices = grants[i]
		}
	}
	return p
}

func testDevices(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8", "mem", "32g"}, withDevices("cuda:2,cuda.shares:1"))

	// The agent's devices survive registration and re-registration.
	a := f.getAgent("a1")
	if len(a.Devices) != 3 || a.Devices[0].ID != "cuda:0" || a.Devices[2].Slot != "cuda.shares" {
		t.Fatalf("devices read back as %+v", a.Devices)
	}
	f.agent("a1", "g", []string{"cpu", "8", "mem", "32g"}, withDevices("cuda:2,cuda.shares:1"))
	if got := f.getAgent("a1"); !cmp.Equal(a.Devices, got.Devices) {
		t.Fatalf("re-registered devices %+v, want %+v", got.Devices, a.Devices)
	}

	// A snapshot shows nothing held; a placement's grants are stored with
	// its kernels and then show as held.
	snap, err := f.s.LoadSnapshot(f.ctx, "g", at(10))
	f.must(err, "load snapshot")
	if len(snap.DeviceHeld) != 0 {
		t.Fatalf("DeviceHeld before any placement = %v", snap.DeviceHeld)
	}
	s1 := f.session("s1", "g", "alice", 1, []string{"cpu", "1", "cuda.device", "1"})
	res := f.apply("g", placeWith(s1, "a1", []domain.DeviceGrant{grant("cuda:0", 0, "cuda.device", 1000)}))
	if len(res.Applied) != 1 {
		t.Fatalf("s1 rejected: %+v", res.Rejected)
	}
	if got := f.get("s1").Kernels[0].Devices; !cmp.Equal(got, []domain.DeviceGrant{grant("cuda:0", 0, "cuda.device", 1000)}) {
		t.Fatalf("s1's kernel devices = %+v", got)
	}
	snap, err = f.s.LoadSnapshot(f.ctx, "g", at(10))
	f.must(err, "load snapshot")
	if diff := cmp.Diff(map[domain.AgentID]map[string]domain.Quantity{"a1": {"cuda:0": 1000}}, snap.DeviceHeld); diff != "" {
		t.Fatalf("DeviceHeld (-want +got):\n%s", diff)
	}
	f.invariant()

	// The guard refuses a device already held, a device not the agent's,
	// grants that do not cover the request, and a device given twice in
	// one plan; it accepts a free one.
	rejects := []struct {
		name   string
		grants []domain.DeviceGrant
	}{
		{"held", []domain.DeviceGrant{grant("cuda:0", 0, "cuda.device", 1000)}},
		{"foreign", []domain.DeviceGrant{grant("cuda:7", 7, "cuda.device", 1000)}},
		{"missing", nil},
		{"half of a whole device", []domain.DeviceGrant{grant("cuda:1", 1, "cuda.device", 500)}},
	}
	for i, r := range rejects {
		s := f.session("r"+string(rune('0'+i)), "g", "bob", 1, []string{"cpu", "1", "cuda.device", "1"})
		res := f.apply("g", placeWith(s, "a1", r.grants))
		if len(res.Applied) != 0 || len(res.Rejected) != 1 || res.Rejected[0].Reason != store.RejectDevices {
			t.Errorf("%s: applied %v, rejected %+v, want one %s rejection", r.name, res.Applied, res.Rejected, store.RejectDevices)
		}
	}
	s2 := f.session("s2", "g", "bob", 1, []string{"cpu", "1", "cuda.device", "1"})
	s3 := f.session("s3", "g", "bob", 1, []string{"cpu", "1", "cuda.device", "1"})
	res = f.apply("g", placeWith(s2, "a1", []domain.DeviceGrant{grant("cuda:1", 1, "cuda.device", 1000)}),
		placeWith(s3, "a1", []domain.DeviceGrant{grant("cuda:1", 1, "cuda.device", 1000)}))
	if len(res.Applied) != 1 || res.Applied[0] != "s2" || len(res.Rejected) != 1 || res.Rejected[0].Reason != store.RejectDevices {
		t.Fatalf("same device twice in one plan: applied %v, rejected %+v", res.Applied, res.Rejected)
	}
	f.invariant()

	// The agent restarting (a new epoch) changes no grant: what its live
	// kernels hold is read from them, so it stays held.
	f.agent("a1", "g", []string{"cpu", "8", "mem", "32g"}, withDevices("cuda:2,cuda.shares:1"))
	snap, err = f.s.LoadSnapshot(f.ctx, "g", at(10))
	f.must(err, "load snapshot")
	if diff := cmp.Diff(map[string]domain.Quantity{"cuda:0": 1000, "cuda:1": 1000}, snap.DeviceHeld["a1"]); diff != "" {
		t.Fatalf("held after the agent re-registered (-want +got):\n%s", diff)
	}

	// Shares pack up to one whole device and no further.
	h1 := f.session("h1", "g", "carol", 1, []string{"cpu", "1", "cuda.shares", "0.6"})
	h2 := f.session("h2", "g", "carol", 1, []string{"cpu", "1", "cuda.shares", "0.5"})
	h3 := f.session("h3", "g", "carol", 1, []string{"cpu", "1", "cuda.shares", "0.4"})
	res = f.apply("g", placeWith(h1, "a1", []domain.DeviceGrant{grant("cuda-shared:0", 0, "cuda.shares", 600)}),
		placeWith(h2, "a1", []domain.DeviceGrant{grant("cuda-shared:0", 0, "cuda.shares", 500)}),
		placeWith(h3, "a1", []domain.DeviceGrant{grant("cuda-shared:0", 0, "cuda.shares", 400)}))
	wantIDs(t, res.Applied, func(id domain.SessionID) domain.SessionID { return id }, []domain.SessionID{"h1", "h3"})
	f.invariant()

	// A kernel that ends frees its devices, once: s1's device can be
	// granted again, and ending it a second time changes nothing.
	end := domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}
	for range 2 {
		_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{"s1"}, []domain.SessionStatus{domain.SessionScheduled}, end, "done", at(20))
		f.must(err, "end s1")
	}
	snap, err = f.s.LoadSnapshot(f.ctx, "g", at(30))
	f.must(err, "load snapshot")
	if diff := cmp.Diff(map[string]domain.Quantity{"cuda:1": 1000, "cuda-shared:0": 1000}, snap.DeviceHeld["a1"]); diff != "" {
		t.Fatalf("held after s1 ended (-want +got):\n%s", diff)
	}
	s4 := f.session("s4", "g", "dave", 1, []string{"cpu", "1", "cuda.device", "1"})
	f.apply("g", placeWith(s4, "a1", []domain.DeviceGrant{grant("cuda:0", 0, "cuda.device", 1000)}))
	if f.get("s4").Session.Status != domain.SessionScheduled {
		t.Fatal("s4 could not take the device s1 freed")
	}

	// A session sent back to PENDING lets go of its grants.
	_, err = f.s.TransitionSessions(f.ctx, []domain.SessionID{"s4"}, []domain.SessionStatus{domain.SessionScheduled},
		domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}, "retry", at(40))
	f.must(err, "requeue s4")
	if got := f.get("s4").Kernels[0].Devices; got != nil {
		t.Fatalf("requeued kernel keeps devices %+v", got)
	}
	f.invariant()

	// The invariant catches a device held twice, as a hand edit would
	// make it.
	f.e.Exec(t, f.db, `UPDATE kernels SET devices = '[{"device":"cuda:1","index":1,"slot":"cuda.device","share":1000}]' WHERE id = 'h1-k0'`)
	if err := CheckInvariants(f.ctx, f.s); err == nil {
		t.Fatal("CheckInvariants passed a device held by two live kernels")
	}
}

// testConcurrentDeviceAppliers has two store instances (two manager
// replicas) apply plans whose grants often collide — the same device of
// the same agent, shares that together pass one whole — while sending
// sessions back to PENDING and ending them. No device may ever be held by
// two live kernels beyond one whole, in any single read of the kernels,
// and the books must balance at the end.
func testConcurrentDeviceAppliers(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("gpus")
	agents := []domain.AgentID{"d-a0", "d-a1", "d-a2"}
	for _, id := range agents {
		f.agent(string(id), "gpus", []string{"cpu", "64", "mem", "64g"}, withDevices("cuda:2,cuda.shares:1"))
	}
	var pool []store.SessionWithKernels
	for i := range 60 {
		req := []string{"cpu", "1", "mem", "1g", "cuda.device", "1"}
		if i%2 == 1 {
			req = []string{"cpu", "1", "mem", "1g", "cuda.shares", []string{"0.3", "0.5", "0.7"}[i%3]}
		}
		pool = append(pool, f.session(fmt.Sprintf("d-s%02d", i), "gpus", "u", 1, req))
	}
	stores := []store.Store{f.s, f.open(Options{Registry: f.reg})}
	var applied, collided atomic.Int64
	var wg sync.WaitGroup
	for w, st := range stores {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w)+1, 19))
			var mine []domain.SessionID
			for i := range 250 {
				s := pool[rng.IntN(len(pool))]
				k := s.Kernels[0]
				var g domain.DeviceGrant
				if q := k.Requested[f.slotID("cuda.shares")]; q > 0 {
					g = grant("cuda-shared:0", 0, "cuda.shares", q)
				} else {
					n := rng.IntN(2)
					g = grant(fmt.Sprintf("cuda:%d", n), n, "cuda.device", 1000)
				}
				res, err := st.ApplyPlan(f.ctx, framework.Plan{Group: "gpus", Placements: []framework.Placement{
					placeWith(s, agents[rng.IntN(len(agents))], []domain.DeviceGrant{g})}}, at(100))
				if err != nil {
					t.Errorf("writer %d: apply: %v", w, err)
					return
				}
				applied.Add(int64(len(res.Applied)))
				for _, r := range res.Rejected {
					if r.Reason == store.RejectDevices {
						collided.Add(1)
					}
				}
				mine = append(mine, res.Applied...)
				if len(mine) > 0 && rng.IntN(3) > 0 {
					id := mine[rng.IntN(len(mine))]
					to := domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}
					if rng.IntN(4) == 0 {
						to = domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}
					}
					if _, err := st.TransitionSessions(f.ctx, []domain.SessionID{id}, []domain.SessionStatus{domain.SessionScheduled},
						to, "", at(101)); err != nil {
						t.Errorf("writer %d: move: %v", w, err)
						return
					}
				}
				if i%10 == 0 {
					list, err := st.ListAgents(f.ctx, store.AgentFilter{Group: "gpus"})
					if err != nil {
						t.Errorf("writer %d: list agents: %v", w, err)
						return
					}
					kernels, err := st.ListKernels(f.ctx, store.KernelFilter{})
					if err != nil {
						t.Errorf("writer %d: list kernels: %v", w, err)
						return
					}
					for _, err := range checkDevices(list, kernels) {
						t.Errorf("writer %d: %v", w, err)
					}
				}
			}
		})
	}
	wg.Wait()
	f.invariant()
	if applied.Load() == 0 || collided.Load() == 0 {
		t.Errorf("%d placements applied, %d refused for devices: the test exercised too little", applied.Load(), collided.Load())
	}
	t.Logf("%d placements applied, %d refused for devices", applied.Load(), collided.Load())
}

func (f *fixture) slotID(name string) domain.SlotID {
	id, ok := f.reg.Lookup(name)
	if !ok {
		f.t.Fatalf("no slot %s", name)
	}
	return id
}
