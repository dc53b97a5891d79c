package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	if failed, err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{
		{KernelSpec: domain.KernelSpec{Kernel: "k1", Session: "s1", Image: "exit:3"}, Slots: slots}}); err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
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

// simAgent is agent a1 on the sim runtime, reporting to the manager at url.
func simAgent(t *testing.T, url string) (*agent.Agent, *sim.Runtime) {
	t.Helper()
	a, err := agent.New(agent.Config{ID: "a1", ResourceGroup: "default", Manager: url, Token: "tok", Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "4", "mem": "4g"}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	return a, rt
}

// TestCreateKernelsRefusesAnInvalidSessionWhole: a spec the runtime can
// never start is answered invalid_spec for its kernel, not as a fault, so
// the manager gives up instead of retrying; no kernel of that session is
// started, since every spec is checked first; and the other sessions of
// the same call start. A manager of an earlier release, which does not
// read per-kernel answers, gets the whole call refused with a 400.
func TestCreateKernelsRefusesAnInvalidSessionWhole(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeManager{})
	defer srv.Close()
	a, rt := simAgent(t, srv.URL)
	ctx, mc, stop := runAgent(t, a, rt)
	defer stop()

	tests := []struct {
		name string
		bad  agentrpc.KernelSpec
	}{
		{"reserved environment name", agentrpc.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: "k2", Session: "s1",
			Image: "sleep", Env: map[string]string{"LD_PRELOAD": "x"}}}},
		{"kernel id that is no file name", agentrpc.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: "../k2", Session: "s1",
			Image: "sleep"}}},
		{"negative cluster index", agentrpc.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: "k2", Session: "s1", Image: "sleep",
			ClusterIdx: -1, ClusterSize: 2, ClusterHosts: []string{"main0", "sub1"}}}},
	}
	for i, tc := range tests {
		good := agentrpc.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep"}}
		other := agentrpc.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: domain.KernelID(fmt.Sprintf("o%d", i)),
			Session: domain.SessionID(fmt.Sprintf("o%d", i)), Image: "sleep"}}
		failed, err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{good, tc.bad, other})
		if err != nil {
			t.Fatalf("%s: CreateKernels = %v, want per-kernel answers", tc.name, err)
		}
		for _, k := range []domain.KernelID{good.Kernel, tc.bad.Kernel} {
			if !errors.Is(failed[k], agentrpc.ErrInvalidSpec) {
				t.Errorf("%s: kernel %s: %v, want ErrInvalidSpec", tc.name, k, failed[k])
			}
		}
		if err := failed[other.Kernel]; err != nil {
			t.Errorf("%s: the other session's kernel failed: %v", tc.name, err)
		}
		live, err := mc.Kernels(ctx, "a1")
		if err != nil {
			t.Fatal(err)
		}
		var ids []domain.KernelID
		for _, k := range live {
			ids = append(ids, k.ID)
		}
		if slices.Contains(ids, good.Kernel) || !slices.Contains(ids, other.Kernel) {
			t.Errorf("%s: kernels after the call: %v, want %s and not %s", tc.name, ids, other.Kernel, good.Kernel)
		}
	}

	// As a manager of an earlier release asks: no per_kernel.
	body, _ := json.Marshal(agentrpc.CreateKernels{Kernels: []agentrpc.KernelSpec{
		{KernelSpec: domain.KernelSpec{Kernel: "w1", Session: "w", Image: "sleep"}},
		{KernelSpec: domain.KernelSpec{Kernel: "w2", Session: "w2", Image: "sleep", Env: map[string]string{"LD_PRELOAD": "x"}}}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.Addr()+"/rpc/create_kernels", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a whole-call create with one refused spec: %d, want 400", resp.StatusCode)
	}
	if live, err := mc.Kernels(ctx, "a1"); err != nil || slices.ContainsFunc(live, func(k agentrpc.KernelReport) bool { return k.ID == "w1" }) {
		t.Errorf("a refused whole-call create started w1: %v (%v)", live, err)
	}

	// A slot this agent's registry does not know is no verdict on the spec
	// (another agent may know it): it stays a retryable failure.
	failed, err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{
		{KernelSpec: domain.KernelSpec{Kernel: "k3", Session: "s3", Image: "sleep"}, Slots: map[string]string{"warp": "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := failed["k3"]; err == nil || errors.Is(err, agentrpc.ErrInvalidSpec) {
		t.Errorf("unknown slot: CreateKernels = %v, want an error that is not ErrInvalidSpec", err)
	}
}

// TestStoppedAgentSendsItsKernelsEnds: an agent told to stop (SIGTERM
// ends its context) ends its kernels by closing its runtime, and the
// manager hears of each end before Run returns; otherwise their sessions
// would stay RUNNING until the manager declared the agent lost.
func TestStoppedAgentSendsItsKernelsEnds(t *testing.T) {
	t.Parallel()
	fm := &fakeManager{}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	a, rt := simAgent(t, srv.URL)
	ctx, mc, stop := runAgent(t, a, rt)
	if failed, err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{
		{KernelSpec: domain.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep"}}}); err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
	}
	got := func(kind domain.EventKind) bool {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		return slices.ContainsFunc(fm.events, func(e domain.KernelEvent) bool { return e.Kernel == "k1" && e.Kind == kind })
	}
	for deadline := time.Now().Add(20 * time.Second); !got(domain.EventKernelStarted); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the manager never heard that k1 started")
		}
	}
	stop()
	if !got(domain.EventKernelTerminated) {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		t.Fatalf("the agent stopped and the manager got %+v, without k1's kernel_terminated", fm.events)
	}
}
