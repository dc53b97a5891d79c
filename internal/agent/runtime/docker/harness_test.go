package docker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// waitLimit bounds every wait in these tests. Containers start in well
// under a second even on vfs, so hitting it means a bug, not a slow engine.
const waitLimit = 30 * time.Second

// recorder is a Sink that tests can wait on.
type recorder struct {
	mu      sync.Mutex
	events  []domain.KernelEvent
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) sink(e domain.KernelEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) all() []domain.KernelEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) count(pred func(domain.KernelEvent) bool) int {
	n := 0
	for _, e := range r.all() {
		if pred(e) {
			n++
		}
	}
	return n
}

// waitFor returns the first event matching pred, waiting for it.
func (r *recorder) waitFor(t *testing.T, what string, pred func(domain.KernelEvent) bool) domain.KernelEvent {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for _, e := range r.events {
			if pred(e) {
				r.mu.Unlock()
				return e
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %s event within %v; events: %+v", what, waitLimit, r.all())
		}
	}
}

func (r *recorder) exit(t *testing.T, id domain.KernelID) domain.KernelEvent {
	t.Helper()
	return r.waitFor(t, "exit of "+string(id), func(e domain.KernelEvent) bool {
		return e.Kind == domain.EventKernelTerminated && e.Kernel == id
	})
}

func isExit(id domain.KernelID) func(domain.KernelEvent) bool {
	return func(e domain.KernelEvent) bool { return e.Kind == domain.EventKernelTerminated && e.Kernel == id }
}

// eventually polls cond until it holds or waitLimit passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitLimit)
		}
		<-tick.C
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

type harness struct {
	t   *testing.T
	env *engineEnv
	cfg docker.Config
	rt  *docker.Runtime
	rec *recorder

	mu sync.Mutex
	n  int
}

// newHarness starts a runtime with an agent id of its own on the test
// engine. At cleanup it closes the runtime, which must succeed and leave no
// container of the agent behind; whatever is left is removed.
func newHarness(t *testing.T, opts ...func(*docker.Config)) *harness {
	t.Helper()
	e := needEngine(t)
	rec := newRecorder()
	cfg := docker.Config{
		Host:       e.host,
		AgentID:    "test-" + randomHex(t, 4),
		DataDir:    t.TempDir(),
		Sink:       rec.sink,
		CloseGrace: time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, env: e, cfg: cfg, rec: rec}
	h.rt = h.open(cfg)
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
	id := domain.KernelID(fmt.Sprintf("k%d-%s", h.n, randomHex(h.t, 3)))
	return runtime.Spec{Kernel: id, Session: "sess-" + domain.SessionID(id), Image: image(tag)}
}

func (h *harness) pull(img string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.rt.Pull(ctx, img); err != nil {
		h.t.Fatalf("Pull(%q): %v", img, err)
	}
}

// start pulls and creates.
func (h *harness) start(spec runtime.Spec) {
	h.t.Helper()
	h.pull(spec.Image)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.rt.Create(ctx, spec); err != nil {
		h.t.Fatalf("Create(%s): %v", spec.Kernel, err)
	}
}

func (h *harness) destroy(id domain.KernelID, grace time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.rt.Destroy(ctx, id, grace); err != nil {
		h.t.Fatalf("Destroy(%s): %v", id, err)
	}
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

func (h *harness) logs(id domain.KernelID) string {
	h.t.Helper()
	return readLogs(h.t, h.rt, id)
}

// waitOutput waits until the kernel has printed want.
func (h *harness) waitOutput(id domain.KernelID, want string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("kernel %s prints %q", id, want), func() bool {
		return strings.Contains(h.logs(id), want)
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

// notFound reports whether err is the runtime's ErrNotFound.
func notFound(err error) bool { return errors.Is(err, runtime.ErrNotFound) }
