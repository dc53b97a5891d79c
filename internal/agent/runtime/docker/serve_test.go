package docker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// freePort is a port nothing on this host listens on now. In the host's
// network the kernel binds the host's own ports, so the test picks one as
// the agent does for a serving image.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// answer is what the serve image says to a GET.
type answer struct {
	Status int
	Header string // X-Sokovan-Kernel
	Kernel string
	Path   string
}

// get asks a serving kernel at addr (host:port) for path, until it
// answers 200 or waitLimit passes.
func get(t *testing.T, addr, path string) answer {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	var a answer
	runtimetest.Eventually(t, waitLimit, fmt.Sprintf("GET http://%s%s answers 200", addr, path), func() bool {
		resp, err := hc.Get("http://" + addr + path)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return false
		}
		a = answer{Status: resp.StatusCode, Header: resp.Header.Get("X-Sokovan-Kernel")}
		if resp.StatusCode != http.StatusOK {
			return false
		}
		if path != "/health" {
			if err := json.Unmarshal(raw, &a); err != nil {
				t.Fatalf("answer %q: %v", raw, err)
			}
		}
		return true
	})
	return a
}

// TestServingKernelInHostNetwork: in the host's network a kernel given a
// port serves on it, at the address it was told to bind, and reports that
// service port on kernel_started and in Live exactly as the process runtime
// does, so deployments, the session proxy and health checks reach it. A
// restarted agent reports it again for the containers it takes back.
func TestServingKernelInHostNetwork(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *docker.Config) { c.NetworkMode = docker.NetworkHost })
	recovered, retried := h.spec("serve"), h.spec("serve")
	wants := map[domain.KernelID][]domain.ServicePort{}
	for _, s := range []*runtime.Spec{&recovered, &retried} {
		s.Port = freePort(t)
		s.Hostname = "main1" // as the manager names every kernel
		h.Start(*s)
		wants[s.Kernel] = []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: s.Port}}
	}
	addr := func(id domain.KernelID) string {
		return net.JoinHostPort(wants[id][0].Host, fmt.Sprint(wants[id][0].Port))
	}

	for id, want := range wants {
		started := h.rec.WaitFor(t, "kernel_started", runtimetest.IsStart(id))
		if diff := cmp.Diff(want, started.ServicePorts); diff != "" {
			t.Errorf("kernel_started's ports of %s (-want +got):\n%s", id, diff)
		}
		if st, _ := liveState(h.rt, id); !cmp.Equal(want, st.Ports) {
			t.Errorf("Live = %+v, want the kernel with its port", st)
		}
		if a := get(t, addr(id), "/health"); a.Status != http.StatusOK {
			t.Errorf("/health of %s = %+v", id, a)
		}
		if a := get(t, addr(id), "/hello"); a.Kernel != string(id) || a.Header != string(id) || a.Path != "/hello" {
			t.Errorf("GET /hello = %+v, want an answer from kernel %s", a, id)
		}
	}

	// The agent dies and a new one takes the containers back, one by the
	// manager's retried create, the other by Recover: both must report the
	// port again (kernel_started, heartbeats), or a manager that lost the
	// first report could never route to the kernel.
	h.rt.Abandon()
	rec := runtimetest.NewRecorder(waitLimit)
	cfg := h.cfg
	cfg.Sink = rec.Sink
	rt := h.open(cfg)
	h.rt, h.Runtime = rt, rt
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := rt.Create(ctx, retried); err != nil {
		t.Fatalf("retried Create after the restart: %v", err)
	}
	started := rec.WaitFor(t, "kernel_started of the adopted kernel", runtimetest.IsStart(retried.Kernel))
	if diff := cmp.Diff(wants[retried.Kernel], started.ServicePorts); diff != "" {
		t.Errorf("kernel_started's ports after a retried create (-want +got):\n%s", diff)
	}
	if err := rt.Recover(ctx); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	for id, want := range wants {
		if st, _ := liveState(rt, id); !st.Running || !cmp.Equal(want, st.Ports) {
			t.Errorf("Live after the restart = %+v, want the running kernel with its port", st)
		}
		if a := get(t, addr(id), "/again"); a.Kernel != string(id) {
			t.Errorf("GET /again after the restart = %+v, want kernel %s", a, id)
		}
		h.Destroy(id, 5*time.Second)
	}
}

// TestUnreachablePortIsNotReported: without the host's network a kernel's
// port is inside its own namespace and published nowhere, so reporting it
// would send the proxy and health checks to whatever holds that port on
// the host. The kernel is still told its port.
func TestUnreachablePortIsNotReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t) // network "none"
	s := h.spec("report")
	s.Port = freePort(t)
	h.Start(s)
	started := h.rec.WaitFor(t, "kernel_started", runtimetest.IsStart(s.Kernel))
	if len(started.ServicePorts) != 0 {
		t.Errorf("kernel_started's ports = %+v, want none on network none", started.ServicePorts)
	}
	if st, _ := liveState(h.rt, s.Kernel); len(st.Ports) != 0 {
		t.Errorf("Live = %+v, want no ports on network none", st)
	}
	h.rec.Exit(t, s.Kernel)
	env := parseReport(t, h.Logs(s.Kernel)).env()
	if env[runtime.EnvPort] != fmt.Sprint(s.Port) || env[runtime.EnvBindHost] != "127.0.0.1" {
		t.Errorf("kernel told %s=%q %s=%q, want %d on 127.0.0.1", runtime.EnvPort, env[runtime.EnvPort],
			runtime.EnvBindHost, env[runtime.EnvBindHost], s.Port)
	}
	c, ok := h.inspect(s.Kernel)
	if !ok {
		t.Fatal("no container for the kernel")
	}
	if l, ok := c.Config.Labels[docker.LabelPort]; ok {
		t.Errorf("label %s = %q on a kernel that reports no port", docker.LabelPort, l)
	}
}

// TestClusterHostsInHostNetwork: a multi-node kernel in the host's network
// finds its peers, on other hosts, by cluster hostname: the container's
// hosts file maps each to the address the manager said it is reached at.
// With no network (the default) there is nothing to map.
func TestClusterHostsInHostNetwork(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{docker.NetworkHost, "none"} {
		h := newHarness(t, func(c *docker.Config) { c.NetworkMode = mode })
		s := h.spec("report")
		s.ClusterRole, s.ClusterIdx, s.ClusterSize, s.Hostname = "main", 0, 2, "main0"
		s.ClusterHosts, s.ClusterAddrs = []string{"main0", "sub1"}, []string{"127.0.0.1", "10.77.0.23"}
		h.Start(s)
		h.rec.Exit(t, s.Kernel)
		c, ok := h.inspect(s.Kernel)
		if !ok {
			t.Fatalf("%s: no container for the kernel", mode)
		}
		want := []string{"main0:127.0.0.1", "sub1:10.77.0.23"}
		if mode == "none" {
			want = nil
		}
		if got := c.HostConfig.ExtraHosts; !slices.Equal(got, want) {
			t.Errorf("%s network: extra hosts %q, want %q", mode, got, want)
		}
	}
}
