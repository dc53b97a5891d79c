package docker_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// waitLimit bounds every wait in these tests. Containers start in well
// under a second even on vfs, so hitting it means a bug, not a slow engine.
const waitLimit = 30 * time.Second

type harness struct {
	runtimetest.Driver
	t   *testing.T
	env *engineEnv
	cfg docker.Config
	rt  *docker.Runtime
	rec *runtimetest.Recorder

	mu sync.Mutex
	n  int
}

// newHarness starts a runtime with an agent id of its own on the test
// engine. At cleanup it closes the runtime, which must succeed and leave no
// container of the agent behind; whatever is left is removed.
func newHarness(t *testing.T, opts ...func(*docker.Config)) *harness {
	t.Helper()
	e := needEngine(t)
	rec := runtimetest.NewRecorder(waitLimit)
	cfg := docker.Config{
		Host:       e.host,
		AgentID:    "test-" + runtimetest.RandomHex(t, 4),
		DataDir:    t.TempDir(),
		Sink:       rec.Sink,
		CloseGrace: time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, env: e, cfg: cfg, rec: rec}
	h.rt = h.open(cfg)
	h.Driver = runtimetest.Driver{T: t, Runtime: h.rt, Wait: waitLimit}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := h.rt.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := h.containers(ctx); len(left) > 0 {
			t.Errorf("containers of agent %s left after Close: %v", cfg.AgentID, left)
			for _, c := range left {
				_, _ = e.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
			}
		}
	})
	return h
}

// open starts another runtime with cfg on the test engine.
func (h *harness) open(cfg docker.Config) *docker.Runtime {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	rt, err := docker.New(ctx, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return rt
}

// containers lists every container, in any state, labelled with the
// harness's agent id.
func (h *harness) containers(ctx context.Context) []container.Summary {
	h.t.Helper()
	res, err := h.env.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", docker.LabelAgent+"="+h.cfg.AgentID),
	})
	if err != nil {
		h.t.Fatalf("list containers: %v", err)
	}
	return res.Items
}

// spec returns a spec for one of the test images with a kernel id unique
// to the test.
func (h *harness) spec(tag string) runtime.Spec {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	id := domain.KernelID(fmt.Sprintf("k%d-%s", h.n, runtimetest.RandomHex(h.t, 3)))
	return runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: id, Session: "sess-" + domain.SessionID(id), Image: image(tag)}}
}

func readLogs(t *testing.T, rt *docker.Runtime, id domain.KernelID) string {
	t.Helper()
	rc, err := rt.Logs(id)
	if err != nil {
		t.Fatalf("Logs(%s): %v", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read logs of %s: %v", id, err)
	}
	return string(b)
}

// waitOutput waits until the kernel has printed want.
func (h *harness) waitOutput(id domain.KernelID, want string) {
	h.t.Helper()
	runtimetest.Eventually(h.t, waitLimit, fmt.Sprintf("kernel %s prints %q", id, want), func() bool {
		return strings.Contains(h.Logs(id), want)
	})
}

func liveState(rt *docker.Runtime, id domain.KernelID) (runtime.KernelState, bool) {
	for _, st := range rt.Live() {
		if st.ID == id {
			return st, true
		}
	}
	return runtime.KernelState{}, false
}

// inspect asks the engine about the kernel's container behind the
// runtime's back; ok is false when there is none.
func (h *harness) inspect(id domain.KernelID) (container.InspectResponse, bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := h.env.cli.ContainerInspect(ctx, docker.ContainerName(h.cfg.AgentID, id), client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return container.InspectResponse{}, false
	}
	if err != nil {
		h.t.Fatalf("inspect %s: %v", id, err)
	}
	return res.Container, true
}
