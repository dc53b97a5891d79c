package agent_test

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestResolveAddressesOnLoopback: with the manager on loopback, the
// defaults are what one-host setups always had: RPC on 127.0.0.1:6001,
// kernels on 127.0.0.1.
func TestResolveAddressesOnLoopback(t *testing.T) {
	got, err := agent.ResolveAddresses("http://127.0.0.1:8470", agent.Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Addresses{Listen: "127.0.0.1:6001", Advertise: "http://127.0.0.1:6001", Kernel: "127.0.0.1"}
	if got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	got, err = agent.ResolveAddresses("http://127.0.0.1:8470", agent.Addresses{Listen: "0.0.0.0:7000"})
	if err != nil || got.Advertise != "http://127.0.0.1:7000" || got.Kernel != "127.0.0.1" {
		t.Errorf("wildcard listen: %+v, %v; want advertised at 127.0.0.1:7000, kernels on 127.0.0.1", got, err)
	}
	given := agent.Addresses{Listen: "127.0.0.1:0", Advertise: "http://agent-7:6001", Kernel: "127.0.0.2"}
	if got, err := agent.ResolveAddresses("http://127.0.0.1:8470", given); err != nil || got != given {
		t.Errorf("everything given: %+v, %v; want it kept", got, err)
	}
	if _, err := agent.ResolveAddresses("http://127.0.0.1:8470", agent.Addresses{Listen: "0.0.0.0:0"}); err == nil {
		t.Error("wildcard listen on port 0 without --advertise: no error")
	}
}

// TestResolveAddressesTowardsARemoteManager: a manager elsewhere is
// called back, and dials kernels, at the address of the interface that
// routes to it, never loopback; loopback given for either is refused.
func TestResolveAddressesTowardsARemoteManager(t *testing.T) {
	const mgr = "http://192.0.2.77:8470,http://192.0.2.78:8470" // TEST-NET-1
	route, err := agent.RouteAddress(mgr)
	if err != nil {
		t.Skipf("no route off this host: %v", err)
	}
	if ip := net.ParseIP(route); ip == nil || ip.IsLoopback() {
		t.Fatalf("route address %q, want a non-loopback IP", route)
	}
	got, err := agent.ResolveAddresses(mgr, agent.Addresses{})
	want := agent.Addresses{Listen: net.JoinHostPort(route, "6001"), Advertise: "http://" + net.JoinHostPort(route, "6001"), Kernel: route}
	if err != nil || got != want {
		t.Errorf("defaults %+v, %v; want %+v", got, err, want)
	}
	got, err = agent.ResolveAddresses(mgr, agent.Addresses{Listen: "[::]:6100"})
	if err != nil || got.Advertise != "http://"+net.JoinHostPort(route, "6100") || got.Kernel != route {
		t.Errorf("wildcard listen: %+v, %v", got, err)
	}
	if _, err := agent.ResolveAddresses(mgr, agent.Addresses{Listen: "127.0.0.1:6001"}); err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("loopback listen with a remote manager: %v, want an error naming --listen", err)
	}
	if _, err := agent.ResolveAddresses(mgr, agent.Addresses{Kernel: "127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "--kernel-address") {
		t.Errorf("loopback kernel address with a remote manager: %v, want an error naming --kernel-address", err)
	}
}

// specRecorder is the sim runtime, keeping the specs the agent made.
type specRecorder struct {
	*sim.Runtime
	specs chan runtime.Spec
}

func (r specRecorder) Create(ctx context.Context, s runtime.Spec) error {
	r.specs <- s
	return r.Runtime.Create(ctx, s)
}

// TestKernelsBindTheKernelAddress: a kernel given a port binds the agent's
// kernel address and is told so; its service port says so; a multi-node
// kernel is told where its peers are reached.
func TestKernelsBindTheKernelAddress(t *testing.T) {
	srv := httptest.NewServer(&fakeManager{})
	defer srv.Close()
	// 127.0.0.2 is a loopback address too on Linux, but not the default.
	a, err := agent.New(agent.Config{ID: "a1", ResourceGroup: "default", Manager: srv.URL, Token: "tok", Listen: "127.0.0.1:0",
		KernelAddress: "127.0.0.2", Capacity: map[string]string{"cpu": "4", "mem": "4g"}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	rec := specRecorder{Runtime: rt, specs: make(chan runtime.Spec, 4)}
	ctx, mc, stop := runAgent(t, a, rec)
	defer stop()
	failed, err := mc.CreateKernels(ctx, "a1", []agentrpc.KernelSpec{{KernelSpec: domain.KernelSpec{
		Kernel: "k1", Session: "s1", Image: "sleep", Serves: true, ClusterRole: "sub", ClusterIdx: 1, ClusterSize: 2, ClusterHosts: []string{"main0", "sub1"}},
		ClusterAddrs: []string{"10.77.0.21", "10.77.0.22"}}})
	if err != nil || failed["k1"] != nil {
		t.Fatalf("create: %v %v", err, failed)
	}
	s := <-rec.specs
	env := runtime.KernelEnv(s)
	if s.Port == 0 || env[runtime.EnvBindHost] != "127.0.0.2" {
		t.Errorf("port %d bound at %q, want a port at 127.0.0.2", s.Port, env[runtime.EnvBindHost])
	}
	if ps := s.ServicePorts(); len(ps) != 1 || ps[0].Host != "127.0.0.2" {
		t.Errorf("service ports %+v, want one at 127.0.0.2", ps)
	}
	if got := env[runtime.EnvClusterAddrs]; got != "10.77.0.21,10.77.0.22" || env[runtime.EnvClusterHosts] != "main0,sub1" {
		t.Errorf("%s=%q with hosts %q, want 10.77.0.21,10.77.0.22 for main0,sub1", runtime.EnvClusterAddrs, got, env[runtime.EnvClusterHosts])
	}
}
