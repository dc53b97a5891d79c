package agent_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// recordingSpecs is the sim runtime, keeping every spec it is given.
type recordingSpecs struct {
	*sim.Runtime
	mu    sync.Mutex
	specs []runtime.Spec
}

func (r *recordingSpecs) Create(ctx context.Context, spec runtime.Spec) error {
	r.mu.Lock()
	r.specs = append(r.specs, spec)
	r.mu.Unlock()
	return r.Runtime.Create(ctx, spec)
}

// TestAgentDevices: an agent with devices registers them with the
// capacity they add up to, and hands each kernel the grants the manager
// sent; a kernel sent none gets an empty (not nil) list, so the runtime
// hides every device from it.
func TestAgentDevices(t *testing.T) {
	t.Parallel()
	fm := &fakeManager{}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	devs, err := domain.ParseFakeDevices("cuda:2")
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "a1", ResourceGroup: "default", Manager: srv.URL, Token: "tok", Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "4", "mem": "4g", "cuda.device": "7"}, Devices: devs, HeartbeatInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	rt := &recordingSpecs{Runtime: s}
	ctx, mc, stop := runAgent(t, a, rt)
	defer stop()
	if _, err := mc.CheckAndPull(ctx, "a1", []string{"sleep"}); err != nil {
		t.Fatal(err)
	}
	var reg agentrpc.Register
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		fm.mu.Lock()
		n := fm.registered
		reg = fm.lastReg
		fm.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never registered")
		}
	}
	if len(reg.Devices) != 2 || reg.Capacity["cuda.device"] != "2" || reg.Capacity["cpu"] != "4" {
		t.Errorf("registered devices %+v, capacity %v; want two devices and cuda.device 2", reg.Devices, reg.Capacity)
	}
	grant := []domain.DeviceGrant{{Device: "cuda:1", Index: 1, Slot: "cuda.device", Share: 1000, Memory: 16 << 30}}
	slots := map[string]string{"cpu": "1"}
	if failed, err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{
		{KernelSpec: domain.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep", Devices: grant}, Slots: slots},
		{KernelSpec: domain.KernelSpec{Kernel: "k2", Session: "s2", Image: "sleep"}, Slots: slots},
	}); err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.specs) != 2 {
		t.Fatalf("%d specs, want 2", len(rt.specs))
	}
	// The kernels of one call start concurrently, in any order.
	slices.SortFunc(rt.specs, func(a, b runtime.Spec) int { return strings.Compare(string(a.Kernel), string(b.Kernel)) })
	if got := rt.specs[0].Devices; len(got) != 1 || got[0] != grant[0] {
		t.Errorf("k1's devices %+v, want %+v", got, grant)
	}
	if got := rt.specs[1].Devices; got == nil || len(got) != 0 {
		t.Errorf("k2's devices %#v, want empty and not nil", got)
	}
}
