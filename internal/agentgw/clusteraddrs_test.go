package agentgw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agentgw"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
)

type lookup map[domain.AgentID]string

func (l lookup) GetAgent(_ context.Context, id domain.AgentID) (domain.Agent, error) {
	return domain.Agent{ID: id, Address: l[id]}, nil
}

// TestCreateKernelsSaysWherePeersAre: a multi-node kernel is sent, with
// its peers' cluster hostnames, the host each is reached at: the address
// its own agent registered, on whatever host that is.
func TestCreateKernelsSaysWherePeersAre(t *testing.T) {
	t.Parallel()
	got := make(chan agentrpc.CreateKernels, 1)
	a1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in agentrpc.CreateKernels
		_ = json.NewDecoder(r.Body).Decode(&in)
		got <- in
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.Created{})
	}))
	defer a1.Close()
	// a3 is only named, never called: its kernel is another agent's to start.
	reg := domain.DefaultRegistry()
	ags := agentgw.NewAgents(agentrpc.NewAgentClient(lookup{"a1": a1.URL, "a3": "10.77.0.23:6001"}, token), reg)
	spec := coordinator.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: "k0", Session: "s", Image: "sleep", ClusterRole: "main",
		ClusterSize: 2, ClusterHosts: []string{"main0", "sub1"}}, ClusterAgents: []domain.AgentID{"a1", "a3"}}
	if err := ags.CreateKernels(context.Background(), "a1", []coordinator.KernelSpec{spec}); err != nil {
		t.Fatal(err)
	}
	in := <-got
	if len(in.Kernels) != 1 || !slices.Equal(in.Kernels[0].ClusterAddrs, []string{"127.0.0.1", "10.77.0.23"}) {
		t.Errorf("cluster addresses sent: %+v, want 127.0.0.1 (a1) and 10.77.0.23 (a3)", in.Kernels)
	}

	// A kernel alone needs no peers' addresses.
	spec = coordinator.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep",
		ClusterHosts: []string{"main0"}}, ClusterAgents: []domain.AgentID{"a1"}}
	if err := ags.CreateKernels(context.Background(), "a1", []coordinator.KernelSpec{spec}); err != nil {
		t.Fatal(err)
	}
	if in := <-got; in.Kernels[0].ClusterAddrs != nil {
		t.Errorf("single kernel sent cluster addresses %v", in.Kernels[0].ClusterAddrs)
	}
}

type agentLookup map[domain.AgentID]domain.Agent

func (l agentLookup) GetAgent(_ context.Context, id domain.AgentID) (domain.Agent, error) {
	return l[id], nil
}

// TestPeersAreToldKernelAddresses: an agent that registered a kernel
// address (--kernel-address, the network its kernels talk on) is named to
// its peers by it, not by the address the manager calls it at; one that
// registered none or a wildcard is named by that address's host.
func TestPeersAreToldKernelAddresses(t *testing.T) {
	t.Parallel()
	got := make(chan agentrpc.CreateKernels, 1)
	a1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in agentrpc.CreateKernels
		_ = json.NewDecoder(r.Body).Decode(&in)
		got <- in
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.Created{})
	}))
	defer a1.Close()
	l := agentLookup{
		"a1": {ID: "a1", Address: a1.URL, KernelAddress: "10.88.0.21"},
		"a2": {ID: "a2", Address: "mgmt-a2.example:6001", KernelAddress: "10.88.0.22"},
		"a3": {ID: "a3", Address: "10.77.0.23:6001", KernelAddress: "0.0.0.0"},
		"a4": {ID: "a4", Address: "10.77.0.24:6001"},
	}
	ags := agentgw.NewAgents(agentrpc.NewAgentClient(l, token), domain.DefaultRegistry())
	spec := coordinator.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: "k0", Session: "s", Image: "sleep", ClusterRole: "main",
		ClusterSize: 4, ClusterHosts: []string{"main0", "sub1", "sub2", "sub3"}}, ClusterAgents: []domain.AgentID{"a1", "a2", "a3", "a4"}}
	if err := ags.CreateKernels(context.Background(), "a1", []coordinator.KernelSpec{spec}); err != nil {
		t.Fatal(err)
	}
	want := []string{"10.88.0.21", "10.88.0.22", "10.77.0.23", "10.77.0.24"}
	if in := <-got; len(in.Kernels) != 1 || !slices.Equal(in.Kernels[0].ClusterAddrs, want) {
		t.Errorf("cluster addresses sent: %+v, want %v", in.Kernels, want)
	}
}

// The coordinator hands over a kernel's request as a Vec; the wire carries
// it as slot names and quantities, formatted here with the manager's
// registry, and the rest of the spec and the time limit as they were.
func TestCreateKernelsFormatsSlotsAtTheWire(t *testing.T) {
	t.Parallel()
	got := make(chan agentrpc.CreateKernels, 1)
	a1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in agentrpc.CreateKernels
		_ = json.NewDecoder(r.Body).Decode(&in)
		got <- in
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.Created{})
	}))
	defer a1.Close()
	reg := domain.DefaultRegistry()
	want := map[string]string{"cpu": "2", "mem": "1g"}
	req, err := reg.ParseSlots(want)
	if err != nil {
		t.Fatal(err)
	}
	ags := agentgw.NewAgents(agentrpc.NewAgentClient(lookup{"a1": a1.URL}, token), reg)
	ks := domain.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep", Command: []string{"sleep", "9"},
		Env: map[string]string{"A": "b"}, Serves: true}
	spec := coordinator.KernelSpec{KernelSpec: ks, Slots: req, TimeLimit: 90 * time.Second}
	if err := ags.CreateKernels(context.Background(), "a1", []coordinator.KernelSpec{spec}); err != nil {
		t.Fatal(err)
	}
	in := <-got
	if len(in.Kernels) != 1 {
		t.Fatalf("sent %+v, want one kernel", in.Kernels)
	}
	sent := in.Kernels[0]
	back, err := reg.ParseSlots(sent.Slots)
	if err != nil || !slices.Equal(back, req) {
		t.Errorf("slots sent %v (%v), want %v", sent.Slots, err, want)
	}
	if diff := cmp.Diff(ks, sent.KernelSpec); diff != "" || sent.TimeLimitMS != 90_000 {
		t.Errorf("spec sent (-want +got):\n%s; time limit %d ms, want 90000", diff, sent.TimeLimitMS)
	}
}
