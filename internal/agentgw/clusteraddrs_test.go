package agentgw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

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
	ags := agentgw.NewAgents(agentrpc.NewAgentClient(lookup{"a1": a1.URL, "a3": "10.77.0.23:6001"}, token))
	spec := coordinator.KernelSpec{Kernel: "k0", Session: "s", Image: "sleep", ClusterRole: "main", ClusterSize: 2,
		ClusterHosts: []string{"main0", "sub1"}, ClusterAgents: []domain.AgentID{"a1", "a3"}}
	if err := ags.CreateKernels(context.Background(), "a1", []coordinator.KernelSpec{spec}); err != nil {
		t.Fatal(err)
	}
	in := <-got
	if len(in.Kernels) != 1 || !slices.Equal(in.Kernels[0].ClusterAddrs, []string{"127.0.0.1", "10.77.0.23"}) {
		t.Errorf("cluster addresses sent: %+v, want 127.0.0.1 (a1) and 10.77.0.23 (a3)", in.Kernels)
	}

	// A kernel alone needs no peers' addresses.
	spec = coordinator.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep", ClusterHosts: []string{"main0"},
		ClusterAgents: []domain.AgentID{"a1"}}
	if err := ags.CreateKernels(context.Background(), "a1", []coordinator.KernelSpec{spec}); err != nil {
		t.Fatal(err)
	}
	if in := <-got; in.Kernels[0].ClusterAddrs != nil {
		t.Errorf("single kernel sent cluster addresses %v", in.Kernels[0].ClusterAddrs)
	}
}
