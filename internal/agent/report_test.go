package agent_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// reporting is a sim runtime that also reports capacity, waiting kernels
// and readiness, as the slurm runtime does, and keeps the specs it is given.
type reporting struct {
	*sim.Runtime
	mu    sync.Mutex
	cpu   string
	specs []runtime.Spec
}

func (r *reporting) Capacity(context.Context) (map[string]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return map[string]string{"cpu": r.cpu, "mem": "4g"}, nil
}

func (r *reporting) Waiting() []runtime.Waiting {
	return []runtime.Waiting{{ID: "queued", Note: "queued in SLURM: Resources"}}
}

func (r *reporting) Create(ctx context.Context, spec runtime.Spec) error {
	r.mu.Lock()
	r.specs = append(r.specs, spec)
	r.mu.Unlock()
	return r.Runtime.Create(ctx, spec)
}

// Heartbeats carry the runtime's current capacity and the kernels waiting
// to start with why; a create's time limit reaches the runtime's spec.
func TestHeartbeatCarriesCapacityAndWaiting(t *testing.T) {
	t.Parallel()
	fm := &fakeManager{}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	a, err := agent.New(agent.Config{ID: "a1", ResourceGroup: "default", Manager: srv.URL, Token: "tok", Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "4", "mem": "4g"}, HeartbeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	rt := &reporting{Runtime: s, cpu: "4"}
	ctx, mc, stop := runAgent(t, a, rt)
	defer stop()
	if _, err := mc.CheckAndPull(ctx, "a1", []string{"sleep"}); err != nil {
		t.Fatal(err)
	}
	reg := domain.DefaultRegistry()
	failed, err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{{KernelSpec: domain.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep"},
		Slots: reg.FormatSlots(reg.NewVec()), TimeLimitMS: 90_000}})
	if err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
	}
	rt.mu.Lock()
	limit := rt.specs[0].TimeLimit
	rt.mu.Unlock()
	if limit != 90*time.Second {
		t.Errorf("runtime spec time limit %s, want the wire's 90s", limit)
	}

	rt.mu.Lock()
	rt.cpu = "12"
	rt.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fm.mu.Lock()
		var hb agentrpc.Heartbeat
		if n := len(fm.beats); n > 0 {
			hb = fm.beats[n-1]
		}
		fm.mu.Unlock()
		ok := hb.Capacity["cpu"] == "12" && len(hb.Waiting) == 1 && hb.Waiting[0].Note == "queued in SLURM: Resources" &&
			len(hb.Kernels) == 1
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last heartbeat %+v, want capacity cpu 12, one waiting kernel and k1", hb)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A kernel the manager marks as serving (an inference session's) is given
// a free port whatever its image is called, as an http-* image is, unless
// its environment names one; other kernels get none. Without it a
// deployment of a container image would have no port to be reached on.
func TestServingKernelsGetAPort(t *testing.T) {
	t.Parallel()
	fm := &fakeManager{}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	a, err := agent.New(agent.Config{ID: "a1", ResourceGroup: "default", Manager: srv.URL, Token: "tok", Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "4", "mem": "4g"}, HeartbeatInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	rt := &reporting{Runtime: s, cpu: "4"}
	ctx, mc, stop := runAgent(t, a, rt)
	defer stop()
	if _, err := mc.CheckAndPull(ctx, "a1", []string{"sleep"}); err != nil {
		t.Fatal(err)
	}
	reg := domain.DefaultRegistry()
	none := reg.FormatSlots(reg.NewVec())
	failed, err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{
		{KernelSpec: domain.KernelSpec{Kernel: "plain", Session: "s1", Image: "sleep"}, Slots: none},
		{KernelSpec: domain.KernelSpec{Kernel: "serving", Session: "s2", Image: "sleep", Serves: true}, Slots: none},
		{KernelSpec: domain.KernelSpec{Kernel: "named", Session: "s3", Image: "sleep", Serves: true,
			Env: map[string]string{"PORT": "9000"}}, Slots: none},
	})
	if err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
	}
	rt.mu.Lock()
	ports := map[domain.KernelID]int{}
	for _, s := range rt.specs {
		ports[s.Kernel] = s.Port
	}
	rt.mu.Unlock()
	if ports["plain"] != 0 || ports["serving"] == 0 || ports["named"] != 9000 {
		t.Errorf("ports given = %v, want none for plain, a free one for serving, 9000 for named", ports)
	}
}
