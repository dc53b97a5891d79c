package docker_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/client"
	"golang.org/x/crypto/ssh"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

func TestNewFailsClearlyWithoutAnEngine(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := docker.New(ctx, docker.Config{Host: "unix:///nonexistent/docker.sock", AgentID: "a1", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/docker.sock") {
		t.Errorf("New against no engine = %v, want an error naming the socket", err)
	}
	for _, id := range []string{"", "-x", "a/b", "a b"} {
		if _, err := docker.New(ctx, docker.Config{AgentID: id, DataDir: t.TempDir()}); err == nil {
			t.Errorf("New with agent id %q succeeded", id)
		}
	}
}

// TestConformance runs the suite every runtime passes.
func TestConformance(t *testing.T) {
	t.Parallel()
	needEngine(t) // before image() can name the registry
	runtimetest.Run(t, runtimetest.Kit{
		Open: func(t *testing.T, sink runtime.Sink) runtime.Runtime {
			return newHarness(t, func(c *docker.Config) { c.Sink = sink }).rt
		},
		Sleep:    image("sleep"),
		Exit:     image("exit3"),
		ExitCode: 3,
		Wait:     waitLimit,
	})
}

func TestPullFromRegistry(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	img := image("pullonly")
	// Only this test pulls the image, but a run with -count pulled it
	// before; without it on the engine the pull must reach the registry.
	if _, err := h.env.cli.ImageRemove(context.Background(), img, client.ImageRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatalf("remove %s before the pull: %v", img, err)
	}
	h.Pull(img)
	h.rec.WaitFor(t, "image_pull_finished", func(e domain.KernelEvent) bool { return e.Kind == domain.EventImagePullFinished })
	var kinds []domain.EventKind
	for _, e := range h.rec.All() {
		if e.Image != img {
			t.Errorf("pull event for image %q, want %q", e.Image, img)
		}
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]domain.EventKind{domain.EventImagePullStarted, domain.EventImagePullFinished}, kinds); diff != "" {
		t.Errorf("pull events (-want +got):\n%s", diff)
	}
	if _, err := h.env.cli.ImageInspect(context.Background(), img); err != nil {
		t.Errorf("engine does not hold %s after Pull: %v", img, err)
	}
	if diff := cmp.Diff([]string{img}, h.rt.Images()); diff != "" {
		t.Errorf("Images() (-want +got):\n%s", diff)
	}

	// Pulled already: returns at once and reports nothing.
	began := time.Now()
	h.Pull(img)
	if took := time.Since(began); took > time.Second {
		t.Errorf("second Pull took %v", took)
	}
	if n := len(h.rec.All()); n != 2 {
		t.Errorf("%d events after a second Pull, want still 2", n)
	}

	// A fresh runtime finds it on the engine without a registry pull.
	again := newHarness(t)
	again.Pull(img)
	fin := again.rec.WaitFor(t, "image_pull_finished", func(e domain.KernelEvent) bool { return e.Kind == domain.EventImagePullFinished })
	if !strings.Contains(fin.Message, "already present") {
		t.Errorf("image_pull_finished of a present image says %q, want it to say the image was already present", fin.Message)
	}
}

func TestPullFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		name    string
		image   string
		want    error
		wantMsg []string
	}{
		{"missing tag", env.registry + "/sokovan-test/kernel:no-such-tag", runtime.ErrUnknownImage,
			[]string{"kernel:no-such-tag", "unknown image", "no such repository or tag"}},
		{"unknown repository", env.registry + "/sokovan-test/absent:v1", runtime.ErrUnknownImage,
			[]string{"absent:v1", "unknown image", "no such repository or tag"}},
		{"malformed reference", "Upper/Case:x", runtime.ErrUnknownImage,
			[]string{"not a valid image reference"}},
		// Port 1 on loopback: nothing listens, so the registry is down, which
		// may pass.
		{"registry unreachable", "127.0.0.1:1/sokovan-test/kernel:v1", runtime.ErrPullFailed,
			[]string{"pull failed", "could not pull"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			err := h.rt.Pull(ctx, tc.image)
			t.Logf("Pull(%q): %v", tc.image, err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Pull(%q) = %v, want %v", tc.image, err, tc.want)
			}
			other := runtime.ErrPullFailed
			if tc.want == runtime.ErrPullFailed {
				other = runtime.ErrUnknownImage
			}
			if errors.Is(err, other) {
				t.Errorf("Pull(%q) = %v matches %v as well", tc.image, err, other)
			}
			var pe *docker.PullError
			if !errors.As(err, &pe) || pe.Image != tc.image {
				t.Errorf("Pull(%q) = %#v, want a *PullError for the image", tc.image, err)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("Pull(%q) message %q does not say %q", tc.image, err, m)
				}
			}
			failed := h.rec.WaitFor(t, "image_pull_failed", func(e domain.KernelEvent) bool {
				return e.Kind == domain.EventImagePullFailed && e.Image == tc.image
			})
			if failed.Message != err.Error() {
				t.Errorf("image_pull_failed message = %q, want the error's %q", failed.Message, err)
			}
		})
	}
	if got := h.rt.Images(); len(got) != 0 {
		t.Errorf("Images() = %v after failed pulls, want none", got)
	}
	s := h.spec("exit3")
	s.Image = tests[0].image
	if err := h.rt.Create(context.Background(), s); !errors.Is(err, runtime.ErrImageNotPulled) {
		t.Errorf("Create of an image the engine lacks = %v, want ErrImageNotPulled", err)
	}
}

func TestExitCodeIsReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("exit3")
	h.Start(s)
	h.rec.WaitFor(t, "kernel_started", func(e domain.KernelEvent) bool {
		return e.Kind == domain.EventKernelStarted && e.Kernel == s.Kernel && e.Session == s.Session
	})
	ev := h.rec.Exit(t, s.Kernel)
	if runtimetest.Code(ev) != 3 || ev.Reason != domain.ReasonExited || ev.Message != "exited with code 3" || ev.Session != s.Session {
		t.Errorf("exit event = %+v, want code 3, reason exited, \"exited with code 3\"", ev)
	}
	st, ok := liveState(h.rt, s.Kernel)
	if !ok || st.Running || st.ExitCode == nil || *st.ExitCode != 3 || st.Image != s.Image {
		t.Fatalf("Live = %+v (listed %v), want exited with 3", st, ok)
	}
	if st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		t.Errorf("times: started %v, finished %v", st.StartedAt, st.FinishedAt)
	}
	if got := h.Logs(s.Kernel); got != "exiting 3\n" {
		t.Errorf("logs = %q, want %q", got, "exiting 3\n")
	}
	h.Destroy(s.Kernel, time.Second)
	if _, ok := h.inspect(s.Kernel); ok {
		t.Errorf("container still exists after Destroy")
	}
	if _, ok := liveState(h.rt, s.Kernel); ok {
		t.Errorf("destroyed kernel still listed by Live")
	}
	// The output outlives the container.
	if got := h.Logs(s.Kernel); got != "exiting 3\n" {
		t.Errorf("logs after Destroy = %q, want them kept", got)
	}
	if n := h.rec.Count(runtimetest.IsExit(s.Kernel)); n != 1 {
		t.Errorf("%d exit events, want 1: Destroy of an exited kernel reports nothing more", n)
	}
	if _, err := h.rt.Logs("../escape"); !errors.Is(err, runtime.ErrInvalidSpec) {
		t.Errorf("Logs(../escape) = %v, want ErrInvalidSpec", err)
	}
}

func TestLogsHoldStdoutAndStderr(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("output")
	h.Start(s)
	h.rec.Exit(t, s.Kernel)
	// The engine copies the two pipes separately, so it keeps the order
	// within a stream but not between them.
	got := h.Logs(s.Kernel)
	if len(got) != len("to-stdout\nto-stderr\n") || !strings.Contains(got, "to-stdout\n") || !strings.Contains(got, "to-stderr\n") {
		t.Errorf("logs = %q, want one line from each stream", got)
	}
}

func TestDestroyStopsPolitely(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("sleep")
	h.Start(s)
	h.waitOutput(s.Kernel, "ready")
	st, ok := liveState(h.rt, s.Kernel)
	if !ok || !st.Running || st.ExitCode != nil {
		t.Fatalf("Live = %+v (listed %v), want it running", st, ok)
	}

	const grace = 10 * time.Second
	began := time.Now()
	h.Destroy(s.Kernel, grace)
	if took := time.Since(began); took >= grace {
		t.Errorf("Destroy took %v: the kernel exits on SIGTERM, so it should not wait out the grace", took)
	}
	// Destroy returns once the exit is recorded: the event is queued.
	ev := h.rec.Exit(t, s.Kernel)
	if ev.Reason != domain.ReasonDestroyed || runtimetest.Code(ev) != 0 || ev.Message != "destroyed: exited with code 0" {
		t.Errorf("exit event = %+v, want destroyed with code 0", ev)
	}
	if _, ok := h.inspect(s.Kernel); ok {
		t.Errorf("container still exists after Destroy")
	}
	if got := h.Logs(s.Kernel); !strings.Contains(got, "terminating") {
		t.Errorf("kept logs = %q, want the kernel's goodbye", got)
	}
}

func TestDestroyKillsAfterGrace(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("stubborn")
	h.Start(s)
	h.waitOutput(s.Kernel, "ready")

	const grace = time.Second
	began := time.Now()
	h.Destroy(s.Kernel, grace)
	if took := time.Since(began); took < grace {
		t.Errorf("Destroy returned after %v, before the %v grace", took, grace)
	}
	ev := h.rec.Exit(t, s.Kernel)
	want := "destroyed: killed by signal SIGKILL after the grace period"
	if ev.Reason != domain.ReasonDestroyed || runtimetest.Code(ev) != 137 || ev.Message != want {
		t.Errorf("exit event = %+v, want destroyed, code 137, %q", ev, want)
	}
	if _, ok := h.inspect(s.Kernel); ok {
		t.Errorf("container still exists after Destroy")
	}
}

func TestDestroyIsIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("stubborn")
	h.Start(s)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { h.Destroy(s.Kernel, 0) }) // zero grace: SIGKILL at once
	}
	wg.Wait()
	h.Destroy(s.Kernel, time.Second)
	h.Destroy("never-created", time.Second)
	ev := h.rec.Exit(t, s.Kernel)
	if runtimetest.Code(ev) != 137 || ev.Message != "destroyed: killed by signal SIGKILL" {
		t.Errorf("exit event = %+v, want an immediate SIGKILL", ev)
	}
	if n := h.rec.Count(runtimetest.IsExit(s.Kernel)); n != 1 {
		t.Errorf("%d exit events for one kernel, want 1", n)
	}
}

func TestCancelledDestroyKillsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("stubborn")
	h.Start(s)
	h.waitOutput(s.Kernel, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := h.rt.Destroy(ctx, s.Kernel, time.Minute)
	took := time.Since(began)
	// The kill lands quickly, so the kernel has usually stopped by the
	// time Destroy returns; if not, Destroy says the context ended.
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Destroy with an ending context = %v", err)
	}
	if took > 10*time.Second {
		t.Errorf("Destroy took %v with a 300ms context and a minute's grace", took)
	}
	ev := h.rec.Exit(t, s.Kernel)
	if runtimetest.Code(ev) != 137 || ev.Reason != domain.ReasonDestroyed || ev.Message != "destroyed: killed by signal SIGKILL" {
		t.Errorf("exit event = %+v, want destroyed by an immediate SIGKILL", ev)
	}
}

func TestLimitsLabelsAndEnvironment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *docker.Config) { c.PidsMax = 64 })
	reg := domain.DefaultRegistry()
	s := h.spec("report")
	s.Registry = reg
	var err error
	if s.Slots, err = reg.ParseSlots(map[string]string{"cpu": "0.5", "mem": "64m"}); err != nil {
		t.Fatal(err)
	}
	s.Hostname = "main1"
	s.Env = map[string]string{"FOO": "bar baz"}
	h.Start(s)
	h.rec.Exit(t, s.Kernel)

	c, ok := h.inspect(s.Kernel)
	if !ok {
		t.Fatal("no container for the kernel")
	}
	hc := c.HostConfig
	// cpu 0.5 = 500 thousandths = 5e8 nano-CPUs; mem 64m = 64 MiB, swap
	// capped at the same figure.
	if hc.NanoCPUs != 500_000_000 || hc.Memory != 64<<20 || hc.PidsLimit == nil || *hc.PidsLimit != 64 {
		t.Errorf("limits: NanoCPUs %d, Memory %d, PidsLimit %v; want 5e8, %d, 64", hc.NanoCPUs, hc.Memory, hc.PidsLimit, 64<<20)
	}
	if string(hc.NetworkMode) != "none" {
		t.Errorf("network mode %q, want none", hc.NetworkMode)
	}
	wantLabels := map[string]string{
		docker.LabelAgent:   h.cfg.AgentID,
		docker.LabelKernel:  string(s.Kernel),
		docker.LabelSession: string(s.Session),
		docker.LabelRole:    "main",
		docker.LabelIdx:     "0",
		docker.LabelImage:   s.Image,
	}
	if diff := cmp.Diff(wantLabels, c.Config.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}

	rep := parseReport(t, h.Logs(s.Kernel))
	if rep.Hostname != "main1" {
		t.Errorf("hostname %q, want main1", rep.Hostname)
	}
	wantEnv := map[string]string{
		"SOKOVAN_SESSION_ID":    string(s.Session),
		"SOKOVAN_KERNEL_ID":     string(s.Kernel),
		"SOKOVAN_IMAGE":         s.Image,
		"SOKOVAN_CLUSTER_ROLE":  "main",
		"SOKOVAN_CLUSTER_IDX":   "0",
		"SOKOVAN_CLUSTER_SIZE":  "1",
		"SOKOVAN_CLUSTER_HOSTS": "",
		"SOKOVAN_CLUSTER_HOST":  "main1",
		"FOO":                   "bar baz",
		"FROM_IMAGE":            "yes", // the image's own environment is kept
		// but not its NVIDIA_VISIBLE_DEVICES=all: no GPU was granted.
		"NVIDIA_VISIBLE_DEVICES": "void",
		"PATH":                   "/",
		"HOSTNAME":               "main1", // the engine's, as HOME is
		"HOME":                   "/",
	}
	if diff := cmp.Diff(wantEnv, rep.env()); diff != "" {
		t.Errorf("kernel environment (-want +got):\n%s", diff)
	}
	if len(rep.SSH) != 0 {
		t.Errorf("a single-kernel session got SSH files %v", rep.SSH)
	}
}

type report struct {
	Hostname string
	Env      []string
	SSH      map[string]struct{ Mode, Content string }
}

func (r report) env() map[string]string {
	m := make(map[string]string, len(r.Env))
	for _, kv := range r.Env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func parseReport(t *testing.T, out string) report {
	t.Helper()
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("kernel report %q: %v", out, err)
	}
	return r
}

func TestClusterKernelsShareAnSSHKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	hosts := []string{"main1", "sub1"}
	session := domain.SessionID("cluster-" + runtimetest.RandomHex(t, 3))
	var specs []runtime.Spec
	for i, role := range []string{domain.RoleMain, domain.RoleSub} {
		s := h.spec("report")
		s.Session = session
		s.ClusterRole, s.ClusterIdx, s.ClusterSize = role, i, 2
		s.ClusterHosts, s.Hostname = hosts, hosts[i]
		specs = append(specs, s)
	}
	var wg sync.WaitGroup
	for _, s := range specs {
		wg.Go(func() { h.Start(s) })
	}
	wg.Wait()

	var pubs []string
	for i, s := range specs {
		if ev := h.rec.Exit(t, s.Kernel); runtimetest.Code(ev) != 0 {
			t.Fatalf("report kernel %d: %+v; logs:\n%s", i, ev, h.Logs(s.Kernel))
		}
		rep := parseReport(t, h.Logs(s.Kernel))
		env := rep.env()
		if rep.Hostname != hosts[i] || env["SOKOVAN_CLUSTER_HOSTS"] != "main1,sub1" || env["SOKOVAN_CLUSTER_SIZE"] != "2" ||
			env["SOKOVAN_CLUSTER_ROLE"] != s.ClusterRole || env[docker.EnvClusterSSHDir] != docker.ClusterSSHDir {
			t.Errorf("kernel %d: hostname %q, env %v", i, rep.Hostname, env)
		}
		priv, pub, auth := rep.SSH["id_cluster"], rep.SSH["id_cluster.pub"], rep.SSH["authorized_keys"]
		if priv.Mode != "-rw-------" {
			t.Errorf("kernel %d: private key mode %s, want -rw------- (ssh refuses others' readable keys)", i, priv.Mode)
		}
		signer, err := ssh.ParsePrivateKey([]byte(priv.Content))
		if err != nil {
			t.Fatalf("kernel %d: private key: %v", i, err)
		}
		if signer.PublicKey().Type() != ssh.KeyAlgoED25519 {
			t.Errorf("kernel %d: key type %s, want ed25519", i, signer.PublicKey().Type())
		}
		got := string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
		if pub.Content != got || auth.Content != got {
			t.Errorf("kernel %d: id_cluster.pub %q and authorized_keys %q, want the private key's %q", i, pub.Content, auth.Content, got)
		}
		pubs = append(pubs, got)
	}
	if pubs[0] != pubs[1] {
		t.Errorf("the session's kernels got different keys: %q and %q", pubs[0], pubs[1])
	}
	c, _ := h.inspect(specs[1].Kernel)
	if len(c.Mounts) != 1 || c.Mounts[0].Destination != docker.ClusterSSHDir || c.Mounts[0].RW {
		t.Errorf("mounts %+v, want the SSH directory read-only at %s", c.Mounts, docker.ClusterSSHDir)
	}
}

func TestCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("sleep")
	h.Pull(s.Image)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := h.rt.Create(context.Background(), s); err != nil {
				t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
	id, ok := h.rt.ContainerID(s.Kernel)
	if !ok {
		t.Fatal("no container for the kernel")
	}
	if err := h.rt.Create(context.Background(), s); err != nil {
		t.Fatalf("repeated Create: %v", err)
	}
	if again, _ := h.rt.ContainerID(s.Kernel); again != id {
		t.Errorf("container changed from %s to %s", id, again)
	}
	if cs := h.containers(context.Background()); len(cs) != 1 {
		t.Errorf("%d containers for one kernel", len(cs))
	}
	if n := h.rec.Count(func(e domain.KernelEvent) bool { return e.Kind == domain.EventKernelStarted }); n != 1 {
		t.Errorf("%d kernel_started events, want 1", n)
	}
}

func TestCommandOverride(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("sleep")
	s.Command = []string{"/kernel", "exit", "7"}
	h.Start(s)
	if ev := h.rec.Exit(t, s.Kernel); runtimetest.Code(ev) != 7 {
		t.Errorf("exit event = %+v, want code 7 from the override", ev)
	}
	// A command the image cannot run fails Create, and leaves nothing.
	bad := h.spec("sleep")
	bad.Command = []string{"/no/such/program"}
	err := h.rt.Create(context.Background(), bad)
	if !errors.Is(err, runtime.ErrCreateFailed) {
		t.Errorf("Create with a missing program = %v, want ErrCreateFailed", err)
	}
	if _, ok := h.inspect(bad.Kernel); ok {
		t.Errorf("a container is left after the failed create")
	}
}

func TestOOMKillIsReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("alloc")
	s.Registry = domain.DefaultRegistry()
	var err error
	if s.Slots, err = s.Registry.ParseSlots(map[string]string{"mem": "32m"}); err != nil {
		t.Fatal(err)
	}
	h.Start(s)
	ev := h.rec.Exit(t, s.Kernel)
	if ev.Reason != domain.ReasonOOMKilled || runtimetest.Code(ev) != 137 || !strings.Contains(ev.Message, "memory limit") {
		t.Errorf("exit event = %+v, want oom-killed, code 137, a message naming the memory limit; logs:\n%s", ev, h.Logs(s.Kernel))
	}
}

func TestRecoverAfterRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	running, exited, stray, recreated := h.spec("sleep"), h.spec("exit3"), h.spec("sleep"), h.spec("sleep")
	for _, s := range []runtime.Spec{running, exited, stray, recreated} {
		h.Start(s)
	}
	h.waitOutput(running.Kernel, "ready")
	runtimetest.Eventually(t, waitLimit, "kernel "+string(exited.Kernel)+" exited on the engine", func() bool {
		c, ok := h.inspect(exited.Kernel)
		return ok && !c.State.Running
	})
	oldID, _ := h.rt.ContainerID(recreated.Kernel)

	// The agent dies: no Close, its containers stay.
	h.rt.Abandon()
	rec := runtimetest.NewRecorder(waitLimit)
	cfg := h.cfg
	cfg.Sink = rec.Sink
	rt := h.open(cfg)
	h.rt, h.Runtime = rt, rt // the harness closes the new one at cleanup
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	// Before Recover, Create and Destroy already find their containers by
	// name: a retried create adopts, a destroy removes.
	if err := rt.Create(ctx, recreated); err != nil {
		t.Fatalf("Create of an existing kernel after the restart: %v", err)
	}
	if id, _ := rt.ContainerID(recreated.Kernel); id != oldID {
		t.Errorf("Create after the restart made container %s, want the existing %s", id, oldID)
	}
	if err := rt.Destroy(ctx, stray.Kernel, time.Second); err != nil {
		t.Fatalf("Destroy of a kernel the new runtime does not know: %v", err)
	}
	if _, ok := h.inspect(stray.Kernel); ok {
		t.Errorf("Destroy before Recover left the container")
	}

	if err := rt.Recover(ctx); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if err := rt.Recover(ctx); err != nil {
		t.Fatalf("second Recover: %v", err)
	}
	var ids []domain.KernelID
	for _, st := range rt.Live() {
		ids = append(ids, st.ID)
	}
	want := []domain.KernelID{running.Kernel, exited.Kernel, recreated.Kernel}
	slices.Sort(want)
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("Live after Recover (-want +got):\n%s", diff)
	}
	st, _ := liveState(rt, running.Kernel)
	if !st.Running || st.Session != running.Session || st.Image != running.Image || st.StartedAt.IsZero() {
		t.Errorf("recovered running kernel = %+v", st)
	}
	st, _ = liveState(rt, exited.Kernel)
	if st.Running || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Errorf("recovered exited kernel = %+v, want exit code 3", st)
	}
	ev := rec.Exit(t, exited.Kernel)
	if runtimetest.Code(ev) != 3 || ev.Reason != domain.ReasonExited || ev.Session != exited.Session {
		t.Errorf("exit reported by Recover = %+v, want code 3", ev)
	}
	if n := rec.Count(runtimetest.IsExit(exited.Kernel)); n != 1 {
		t.Errorf("%d exit events for the exited kernel after two Recovers, want 1", n)
	}

	// The recovered running kernel is watched like any other.
	if err := rt.Destroy(ctx, running.Kernel, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if ev := rec.Exit(t, running.Kernel); ev.Reason != domain.ReasonDestroyed || runtimetest.Code(ev) != 0 {
		t.Errorf("exit of the recovered kernel = %+v, want destroyed with code 0", ev)
	}
	if got := readLogs(t, rt, recreated.Kernel); !strings.Contains(got, "ready") {
		t.Errorf("logs of an adopted kernel = %q", got)
	}
}

func TestCloseRemovesContainers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *docker.Config) { c.CloseGrace = time.Second })
	var ids []domain.KernelID
	for _, tag := range []string{"sleep", "stubborn", "exit3"} {
		s := h.spec(tag)
		h.Start(s)
		ids = append(ids, s.Kernel)
	}
	h.waitOutput(ids[1], "ready")
	h.rec.Exit(t, ids[2])
	if n := len(h.containers(context.Background())); n != 3 {
		t.Fatalf("%d containers before Close, want 3", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.rt.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := h.containers(ctx); len(left) != 0 {
		t.Errorf("containers after Close: %v", left)
	}
	if got := h.rt.Live(); len(got) != 0 {
		t.Errorf("Live after Close = %+v", got)
	}
	// Close delivers the exits it caused before returning.
	for _, id := range ids {
		if n := h.rec.Count(runtimetest.IsExit(id)); n != 1 {
			t.Errorf("kernel %s: %d exit events, want 1", id, n)
		}
	}
	if err := h.rt.Pull(ctx, image("sleep")); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Pull after Close = %v, want ErrClosed", err)
	}
	if err := h.rt.Create(ctx, h.spec("sleep")); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Create after Close = %v, want ErrClosed", err)
	}
	if err := h.rt.Recover(ctx); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Recover after Close = %v, want ErrClosed", err)
	}
	if err := h.rt.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Containers of other agents on the same engine are not Recover's.
func TestRecoverLeavesOtherAgentsAlone(t *testing.T) {
	t.Parallel()
	mine, theirs := newHarness(t), newHarness(t)
	s := theirs.spec("sleep")
	theirs.Start(s)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := mine.rt.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mine.rt.Live(); len(got) != 0 {
		t.Errorf("Recover adopted another agent's kernels: %+v", got)
	}
	if err := mine.rt.Destroy(ctx, s.Kernel, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := theirs.inspect(s.Kernel); !ok {
		t.Errorf("Destroy on one agent removed another agent's container")
	}
}
