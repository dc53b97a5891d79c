package coordinator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// reregisterWithDevices registers agent again, as its restart would, with
// fake devices (spec as --devices takes it) and the capacity they add up
// to, and returns the new epoch.
func (h *harness) reregisterWithDevices(agent domain.AgentID, spec string) int64 {
	h.t.Helper()
	a, err := h.st.GetAgent(h.ctx, agent)
	if err != nil {
		h.t.Fatal(err)
	}
	devs, err := domain.ParseFakeDevices(spec)
	if err != nil {
		h.t.Fatal(err)
	}
	a.Devices = devs
	for i, q := range domain.DeviceCapacity(h.reg, devs) {
		if q != 0 {
			a.Capacity[i] = q
		}
	}
	back, err := h.st.RegisterAgent(h.ctx, a, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	h.agents.mu.Lock()
	h.agents.epochs[agent] = back.Epoch
	h.agents.mu.Unlock()
	return back.Epoch
}

// submitGPU creates a PENDING single-kernel session asking one cpu and
// gpus whole devices.
func (h *harness) submitGPU(image, gpus string) domain.SessionID {
	h.t.Helper()
	h.n++
	id := domain.SessionID(fmt.Sprintf("s-%04d", h.n))
	req, err := h.reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g", "cuda.device": gpus})
	if err != nil {
		h.t.Fatal(err)
	}
	s := domain.Session{ID: id, Name: string(id), Owner: domain.Owner{User: "alice", Project: "p", Domain: "d"},
		Type: domain.TypeBatch, Image: image, Architecture: "x86_64", ResourceGroup: "default",
		ClusterMode: domain.SingleNode, ClusterSize: 1, Requested: req, Status: domain.SessionPending, CreatedAt: h.clock.Now()}
	k := domain.Kernel{ID: domain.KernelID(string(id) + "-k0"), SessionID: id, ClusterRole: domain.RoleMain, Image: image,
		Architecture: "x86_64", Requested: req.Clone(), Status: domain.KernelPending}
	if err := h.st.CreateSession(h.ctx, s, []domain.Kernel{k}); err != nil {
		h.t.Fatal(err)
	}
	h.c.Mark()
	return id
}

// TestRestartWithFewerDevices: an agent that comes back without devices
// its kernels hold is believed (it knows its hardware). The kernels
// holding a vanished device are lost with it as with a lost agent: a
// started one ends in ERROR and its session terminates, a session not
// yet started goes back to PENDING with its grants dropped, and the rest
// of the agent's kernels run on. No grant is left naming a device the
// agent does not have (harness.check runs the store invariants).
func TestRestartWithFewerDevices(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		const agent = "agent-0"
		h.reregisterWithDevices(agent, "cuda:3")
		kept := h.submitGPU("sleep", "1")
		h.until(kept, domain.SessionRunning)
		lost := h.submitGPU("sleep", "1")
		h.until(lost, domain.SessionRunning)
		// A slow pull holds the third session in PREPARING, its device
		// granted.
		h.agents.stallPull = true
		waiting := h.submitGPU("sleep", "1")
		h.until(waiting, domain.SessionPreparing)
		held := map[domain.SessionID]string{}
		for _, id := range []domain.SessionID{kept, lost, waiting} {
			k := h.session(id).Kernels[0]
			if len(k.Devices) != 1 {
				t.Fatalf("session %s holds %+v, want one device", id, k.Devices)
			}
			held[id] = k.Devices[0].Device
		}
		if held[kept] != "cuda:0" || held[lost] != "cuda:1" || held[waiting] != "cuda:2" {
			t.Fatalf("grants %v, want cuda:0, cuda:1 and cuda:2 in submit order", held)
		}

		// The agent restarts with one device; its two containers survived.
		epoch := h.reregisterWithDevices(agent, "cuda:1")
		present := []domain.KernelID{h.session(kept).Kernels[0].ID, h.session(lost).Kernels[0].ID}
		if err := h.c.AgentRestarted(h.ctx, agent, epoch, present); err != nil {
			t.Fatal(err)
		}
		h.check()

		k := h.session(lost).Kernels[0]
		if k.Status != domain.KernelError || !strings.Contains(k.StatusReason, "cuda:1") {
			t.Errorf("kernel on the vanished device is %v (%q), want ERROR naming cuda:1", k.Status, k.StatusReason)
		}
		// The same registration's report of the two containers tells the
		// agent to destroy the lost one.
		destroy, err := h.c.Settle(h.ctx, agent, epoch, []coordinator.KernelReport{{ID: present[0], Running: true}, {ID: present[1], Running: true}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]domain.KernelID{k.ID}, destroy); diff != "" {
			t.Errorf("kernels to destroy (-want +got):\n%s", diff)
		}
		w := h.session(waiting)
		if w.Session.Status != domain.SessionPending || len(w.Kernels[0].Devices) != 0 {
			t.Errorf("unstarted session is %v holding %+v, want PENDING holding nothing", w.Session.Status, w.Kernels[0].Devices)
		}
		h.wantHistory(waiting, "AgentLost:EXPIRED")
		h.until(lost, domain.SessionTerminated)
		h.steps(3)
		h.wantStatus(kept, domain.SessionRunning)
		// The one device left is kept's: the requeued session waits.
		h.wantStatus(waiting, domain.SessionPending)
		if got := h.session(kept).Kernels[0].Devices; len(got) != 1 || got[0].Device != "cuda:0" {
			t.Errorf("surviving kernel holds %+v, want cuda:0", got)
		}
	})
}
