package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// fakeManager records what an agent sends and refuses the first failEvents
// event deliveries with a 503, as a manager restarting would. It stands in
// for the manager only to inject that fault.
type fakeManager struct {
	mu         sync.Mutex
	failEvents int
	events     []domain.KernelEvent
	beats      []agentrpc.Heartbeat
	registered int
	lastReg    agentrpc.Register
}

func (f *fakeManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer tok" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/v1/agent/register":
		f.registered++
		_ = json.NewDecoder(r.Body).Decode(&f.lastReg)
		_ = json.NewEncoder(w).Encode(agentrpc.Registered{Epoch: int64(f.registered)})
	case "/v1/agent/heartbeat":
		var hb agentrpc.Heartbeat
		_ = json.NewDecoder(r.Body).Decode(&hb)
		f.beats = append(f.beats, hb)
		_ = json.NewEncoder(w).Encode(agentrpc.HeartbeatReply{})
	case "/v1/agent/events":
		if f.failEvents > 0 {
			f.failEvents--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var in agentrpc.Events
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.events = append(f.events, in.Events...)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func TestAgentDeliversEventsInOrderThroughFailures(t *testing.T) {
	t.Parallel()
	fm := &fakeManager{failEvents: 3}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	a, err := agent.New(agent.Config{ID: "a1", ResourceGroup: "default", Manager: srv.URL, Token: "tok", Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "4", "mem": "4g"}, HeartbeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, rt) }()
	mc := agentrpc.NewAgentClient(staticLookup{"a1": "http://" + a.Addr()}, "tok")

	states, err := mc.CheckAndPull(ctx, "a1", []string{"exit:3"})
	if err != nil {
		t.Fatal(err)
	}
	if !states["exit:3"].Ready {
		t.Fatalf("pull state %+v, want ready", states)
	}
	reg := domain.DefaultRegistry()
	slots := reg.FormatSlots(reg.NewVec())
	if err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{{Kernel: "k1", Session: "s1", Image: "exit:3", Slots: slots}}); err != nil {
		t.Fatal(err)
	}
	// The kernel exits with 3 after a second; wait for its events and for a
	// heartbeat that reports it exited.
	deadline := time.Now().Add(20 * time.Second)
	for {
		fm.mu.Lock()
		kinds := make([]string, len(fm.events))
		for i, e := range fm.events {
			kinds[i] = string(e.Kind)
		}
		var exited bool
		for _, hb := range fm.beats {
			for _, k := range hb.Kernels {
				exited = exited || (k.ID == "k1" && !k.Running && k.ExitCode != nil && *k.ExitCode == 3)
			}
		}
		fm.mu.Unlock()
		want := []string{"image_pull_started", "image_pull_finished", "kernel_started", "kernel_terminated"}
		if slices.Equal(kinds, want) && exited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %v (want %v), heartbeat reported exit: %v", kinds, want, exited)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := mc.DestroyKernel(ctx, "a1", "k1", false); err != nil {
		t.Fatal(err)
	}
	// Unauthenticated calls are refused.
	bad := agentrpc.NewAgentClient(staticLookup{"a1": "http://" + a.Addr()}, "wrong")
	if _, err := bad.CheckAndPull(ctx, "a1", []string{"sleep"}); !agentrpc.IsRefused(err) {
		t.Fatalf("wrong token: %v, want refused", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type staticLookup map[domain.AgentID]string

// runAgent runs agent a1 on rt and returns a context that lives as long
// as it does and a client of its RPC, as the manager calls it; stop ends
// the agent and fails the test if Run did.
func runAgent(t *testing.T, a *agent.Agent, rt runtime.Runtime) (context.Context, *agentrpc.AgentClient, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, rt) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	return ctx, agentrpc.NewAgentClient(staticLookup{"a1": "http://" + a.Addr()}, "tok"), stop
}

func (s staticLookup) GetAgent(_ context.Context, id domain.AgentID) (domain.Agent, error) {
	return domain.Agent{ID: id, Address: s[id]}, nil
}

// TestCreateKernelsRefusesAnInvalidSpecWhole: a spec the runtime can never
// start is answered 400 invalid_spec, not 500, so the manager gives up
// instead of retrying; and no kernel of the call is started, since every
// spec is checked first.
func TestCreateKernelsRefusesAnInvalidSpecWhole(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeManager{})
	defer srv.Close()
	a, err := agent.New(agent.Config{ID: "a1", ResourceGroup: "default", Manager: srv.URL, Token: "tok", Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "4", "mem": "4g"}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	ctx, mc, stop := runAgent(t, a, rt)
	defer stop()

	tests := []struct {
		name string
		bad  agentrpc.KernelSpec
	}{
		{"reserved environment name", agentrpc.KernelSpec{Kernel: "k2", Session: "s1", Image: "sleep", Env: map[string]string{"LD_PRELOAD": "x"}}},
		{"kernel id that is no file name", agentrpc.KernelSpec{Kernel: "../k2", Session: "s1", Image: "sleep"}},
		{"negative cluster index", agentrpc.KernelSpec{Kernel: "k2", Session: "s1", Image: "sleep", ClusterIdx: -1, ClusterSize: 2,
			ClusterHosts: []string{"main0", "sub1"}}},
	}
	for _, tc := range tests {
		good := agentrpc.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep"}
		err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{good, tc.bad})
		if !errors.Is(err, agentrpc.ErrInvalidSpec) {
			t.Errorf("%s: CreateKernels = %v, want ErrInvalidSpec", tc.name, err)
		}
		var se *agentrpc.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
			t.Errorf("%s: CreateKernels = %v, want a 400", tc.name, err)
		}
		if live, err := mc.Kernels(ctx, "a1"); err != nil || len(live) != 0 {
			t.Errorf("%s: kernels after the refused call: %v (%v), want none", tc.name, live, err)
		}
	}
	// A slot this agent's registry does not know is no verdict on the spec
	// (another agent may know it): it stays a retryable failure.
	err = mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{{Kernel: "k3", Session: "s1", Image: "sleep", Slots: map[string]string{"warp": "1"}}})
	if err == nil || errors.Is(err, agentrpc.ErrInvalidSpec) {
		t.Errorf("unknown slot: CreateKernels = %v, want an error that is not ErrInvalidSpec", err)
	}
}
