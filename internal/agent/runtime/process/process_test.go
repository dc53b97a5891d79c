package process_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// waitLimit bounds every wait in these tests; things normally happen in
// milliseconds, so hitting it means a bug, not a slow machine.
const waitLimit = 15 * time.Second

type harness struct {
	runtimetest.Driver
	t *testing.T
	// prefix keeps kernel ids apart across -count runs, whose test names
	// repeat.
	prefix string
	rt     *process.Runtime
	rec    *runtimetest.Recorder
	mu     sync.Mutex
	ids    []domain.KernelID
	n      int
}

func selfExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// testCatalog is DefaultCatalog plus images that make behaviours easy to
// provoke.
func testCatalog(self string) process.Catalog {
	cat := process.DefaultCatalog(self)
	sh := func(script string) process.Entry {
		return process.Entry{Program: "sh", Args: func(string, runtime.Spec) ([]string, error) {
			return []string{"-c", script}, nil
		}}
	}
	cat.Images["env-dump"] = sh(`env > "$ENV_OUT"`)
	cat.Images["output"] = sh(`echo to-stdout; echo to-stderr >&2`)
	// Ignoring SIGTERM is inherited by sleep; "ready" says the trap is set.
	cat.Images["stubborn"] = sh(`trap "" TERM; echo ready; sleep 100`)
	cat.Images["forker"] = sh(`sleep 100 & sleep 100 & echo ready; wait`)
	cat.Images["self-signal"] = sh(`kill -USR1 $$`)
	cat.Images["alloc"] = process.Entry{Program: self, Args: func(string, runtime.Spec) ([]string, error) {
		return []string{allocArg}, nil
	}}
	return cat
}

// sharedDir is a directory every kernel may write to, whatever uid the
// runtime gives it; t.TempDir is private to the test's user.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sokovan-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func uniqueName(t testing.TB) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sokovan-test-" + hex.EncodeToString(b)
}

// newHarness builds a runtime whose Close is checked at cleanup: it must
// succeed and leave no process of any kernel the test created.
func newHarness(t *testing.T, opts ...func(*process.Config)) *harness {
	t.Helper()
	rec := runtimetest.NewRecorder(waitLimit)
	cfg := process.Config{
		DataDir: t.TempDir(),
		Catalog: testCatalog(selfExe(t)),
		Sink:    rec.Sink,
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), childEnv + "=1"},
		Cgroups: process.CgroupConfig{Name: uniqueName(t)},
	}
	for _, o := range opts {
		o(&cfg)
	}
	rt, err := process.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, rt: rt, rec: rec, prefix: uniqueName(t)[len("sokovan-test-"):]}
	h.Driver = runtimetest.Driver{T: t, Runtime: rt, Wait: waitLimit}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := kernelProcs(t, h.ids...); len(left) > 0 {
			t.Errorf("processes of kernels %v still alive after Close: %v", h.ids, left)
		}
	})
	return h
}

// spec returns a spec for image with a kernel id unique to the test.
func (h *harness) spec(image string) runtime.Spec {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '-'
	}, h.t.Name())
	id := domain.KernelID(fmt.Sprintf("%s-%s-%d", name, h.prefix, h.n))
	h.ids = append(h.ids, id)
	return runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: id, Session: "sess-" + domain.SessionID(id),
		Image: image, Env: map[string]string{"SOKOVAN_EXIT_AFTER": "0"}}}
}

// kernelProcs finds live processes whose environment names one of ids: the
// kernels' own processes and anything they forked.
func kernelProcs(t *testing.T, ids ...domain.KernelID) []int {
	t.Helper()
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[runtime.EnvKernelID+"="+string(id)] = true
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if want[string(kv)] {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// settledProcs waits until the kernel's processes are visible and returns
// them.
func settledProcs(t *testing.T, id domain.KernelID) []int {
	t.Helper()
	var got []int
	runtimetest.Eventually(t, waitLimit, "kernel "+string(id)+" visible in /proc", func() bool {
		got = kernelProcs(t, id)
		return len(got) > 0
	})
	return got
}

// TestConformance runs the suite every runtime passes.
func TestConformance(t *testing.T) {
	t.Parallel()
	runtimetest.Run(t, runtimetest.DevImages(runtimetest.Kit{
		Open: func(t *testing.T, sink runtime.Sink) runtime.Runtime {
			return newHarness(t, func(c *process.Config) { c.Sink = sink }).rt
		},
		Wait: waitLimit,
	}))
}

func TestSleepRunsUntilDestroyed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("sleep")
	h.Start(s)

	st, ok := h.Live(s.Kernel)
	if !ok || !st.Running || st.ExitCode != nil {
		t.Fatalf("after Create, Live has %+v (listed %v), want it running", st, ok)
	}
	if got := settledProcs(t, s.Kernel); len(got) != 1 {
		t.Fatalf("kernel processes = %v, want exactly one", got)
	}
	h.rec.WaitFor(t, "kernel_started", func(e domain.KernelEvent) bool {
		return e.Kind == domain.EventKernelStarted && e.Kernel == s.Kernel && e.Session == s.Session
	})

	h.Destroy(s.Kernel, 5*time.Second)
	// Destroy returns only once the kernel has stopped, so the event and
	// the process table agree at once.
	if got := kernelProcs(t, s.Kernel); len(got) != 0 {
		t.Fatalf("after Destroy, kernel processes = %v", got)
	}
	ev := h.rec.Exit(t, s.Kernel)
	if ev.Reason != domain.ReasonDestroyed || runtimetest.Code(ev) != 128+15 || !strings.Contains(ev.Message, "SIGTERM") {
		t.Errorf("exit event = %+v, want reason destroyed, code 143, message naming SIGTERM", ev)
	}
	if _, ok := h.Live(s.Kernel); ok {
		t.Errorf("destroyed kernel still listed by Live")
	}
}

func TestExitImages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		image     string
		exitAfter string // "" leaves SOKOVAN_EXIT_AFTER unset
		wantCode  int
		atLeast   time.Duration
	}{
		{"exit:0 after the default second", "exit:0", "", 0, time.Second},
		{"exit:3 after 0.3s", "exit:3", "0.3", 3, 300 * time.Millisecond},
		{"exit:255", "exit:255", "0", 255, 0},
		{"bad SOKOVAN_EXIT_AFTER", "exit:7", "soon", 125, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			s := h.spec(tc.image)
			delete(s.Env, "SOKOVAN_EXIT_AFTER")
			if tc.exitAfter != "" {
				s.Env["SOKOVAN_EXIT_AFTER"] = tc.exitAfter
			}
			h.Start(s)
			ev := h.rec.Exit(t, s.Kernel)
			if runtimetest.Code(ev) != tc.wantCode || ev.Reason != domain.ReasonExited {
				t.Fatalf("exit event = %+v, want code %d, reason exited", ev, tc.wantCode)
			}
			st, ok := h.Live(s.Kernel)
			if !ok || st.Running || st.ExitCode == nil || *st.ExitCode != tc.wantCode {
				t.Fatalf("Live = %+v (listed %v), want exited with %d", st, ok, tc.wantCode)
			}
			if ran := st.FinishedAt.Sub(st.StartedAt); ran < tc.atLeast {
				t.Errorf("ran %v, want at least %v", ran, tc.atLeast)
			}
		})
	}
}

func TestUnknownImageFailsPull(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *process.Config) { c.Catalog = process.DefaultCatalog(selfExe(t)) })
	tests := []struct {
		image, wantMsg string
	}{
		{"foo", `image "foo" is not in the catalog (known: exit:N, http-echo, sleep)`},
		{"exit:256", `image "exit:256" is not in the catalog (known: exit:N, http-echo, sleep): exit code 256 is outside 0-255`},
		{"exit:-1", `image "exit:-1" is not in the catalog (known: exit:N, http-echo, sleep): exit code "-1" is not a number from 0 to 255`},
		{"exit:", `image "exit:" is not in the catalog (known: exit:N, http-echo, sleep): exit code "" is not a number from 0 to 255`},
		{"sleeps", `image "sleeps" is not in the catalog (known: exit:N, http-echo, sleep)`},
	}
	for _, tc := range tests {
		err := h.rt.Pull(context.Background(), tc.image)
		if !errors.Is(err, runtime.ErrUnknownImage) {
			t.Errorf("Pull(%q) = %v, want ErrUnknownImage", tc.image, err)
			continue
		}
		if err.Error() != tc.wantMsg {
			t.Errorf("Pull(%q) message:\n got %s\nwant %s", tc.image, err, tc.wantMsg)
		}
	}
	failed := h.rec.WaitFor(t, "image_pull_failed", func(e domain.KernelEvent) bool { return e.Kind == domain.EventImagePullFailed && e.Image == "foo" })
	if !strings.Contains(failed.Message, "not in the catalog") {
		t.Errorf("image_pull_failed message = %q", failed.Message)
	}
	if got := h.rt.Images(); len(got) != 0 {
		t.Errorf("Images() = %v after failed pulls, want none", got)
	}
	// Create refuses an image that was never pulled, known or not.
	for _, image := range []string{"foo", "sleep"} {
		err := h.rt.Create(context.Background(), h.spec(image))
		if !errors.Is(err, runtime.ErrImageNotPulled) {
			t.Errorf("Create(%q) without Pull = %v, want ErrImageNotPulled", image, err)
		}
	}
	h.Pull("exit:0")
	h.Pull("exit:0") // a second pull is a no-op
	if diff := cmp.Diff([]string{"exit:0"}, h.rt.Images()); diff != "" {
		t.Errorf("Images() (-want +got):\n%s", diff)
	}
}

func TestEnvCarriesClusterFacts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	out := filepath.Join(sharedDir(t), "env")
	s := h.spec("env-dump")
	s.ClusterRole, s.ClusterIdx, s.ClusterSize = domain.RoleSub, 2, 3
	s.ClusterHosts = []string{"main1", "sub1", "sub2"}
	s.Hostname = "sub2"
	s.Port = 8080
	s.Env = map[string]string{"ENV_OUT": out, "FOO": "bar baz"}
	h.Start(s)
	if ev := h.rec.Exit(t, s.Kernel); runtimetest.Code(ev) != 0 {
		t.Fatalf("env-dump exited %+v; logs:\n%s", ev, h.Logs(s.Kernel))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	want := map[string]string{
		"SOKOVAN_SESSION_ID":    string(s.Session),
		"SOKOVAN_KERNEL_ID":     string(s.Kernel),
		"SOKOVAN_IMAGE":         "env-dump",
		"SOKOVAN_CLUSTER_ROLE":  "sub",
		"SOKOVAN_CLUSTER_IDX":   "2",
		"SOKOVAN_CLUSTER_SIZE":  "3",
		"SOKOVAN_CLUSTER_HOSTS": "main1,sub1,sub2",
		"SOKOVAN_CLUSTER_HOST":  "sub2",
		"SOKOVAN_PORT":          "8080",
		"SOKOVAN_BIND_HOST":     "127.0.0.1",
		"ENV_OUT":               out,
		"FOO":                   "bar baz",
		"PATH":                  os.Getenv("PATH"),
		childEnv:                "1",
	}
	// sh adds a few of its own (PWD, SHLVL, _); nothing from the agent's
	// environment beyond BaseEnv may appear.
	for _, k := range []string{"PWD", "SHLVL", "_", "OLDPWD"} {
		delete(got, k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kernel environment (-want +got):\n%s", diff)
	}
}

func TestLogsCaptureStdoutAndStderr(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("output")
	h.Start(s)
	h.rec.Exit(t, s.Kernel)
	if got := h.Logs(s.Kernel); !strings.Contains(got, "to-stdout\n") || !strings.Contains(got, "to-stderr\n") {
		t.Errorf("logs = %q, want both streams", got)
	}
	h.Destroy(s.Kernel, time.Second)
	if got := h.Logs(s.Kernel); !strings.Contains(got, "to-stdout") {
		t.Errorf("after Destroy, logs = %q, want them kept", got)
	}
	if _, err := h.rt.Logs("../escape"); !errors.Is(err, runtime.ErrInvalidSpec) {
		t.Errorf("Logs(../escape) = %v, want ErrInvalidSpec", err)
	}
}

func TestDestroyKillsAfterGrace(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("stubborn")
	h.Start(s)
	runtimetest.Eventually(t, waitLimit, "stubborn kernel has set its trap", func() bool { return strings.Contains(h.Logs(s.Kernel), "ready") })

	const grace = 300 * time.Millisecond
	began := time.Now()
	h.Destroy(s.Kernel, grace)
	if took := time.Since(began); took < grace {
		t.Errorf("Destroy returned after %v, before the %v grace", took, grace)
	}
	ev := h.rec.Exit(t, s.Kernel)
	if ev.Reason != domain.ReasonDestroyed || runtimetest.Code(ev) != 128+9 || !strings.Contains(ev.Message, "SIGKILL") {
		t.Errorf("exit event = %+v, want destroyed, code 137, message naming SIGKILL", ev)
	}
	if got := kernelProcs(t, s.Kernel); len(got) != 0 {
		t.Errorf("after Destroy, processes %v remain (sleep child included)", got)
	}
}

func TestCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("sleep")
	h.Start(s)
	pid, ok := h.rt.PID(s.Kernel)
	if !ok {
		t.Fatal("no pid for a running kernel")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- h.rt.Create(context.Background(), s) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("repeated Create: %v", err)
		}
	}
	if again, _ := h.rt.PID(s.Kernel); again != pid {
		t.Errorf("pid changed from %d to %d", pid, again)
	}
	if got := settledProcs(t, s.Kernel); !slices.Equal(got, []int{pid}) {
		t.Errorf("kernel processes = %v, want only %d", got, pid)
	}
	if n := len(h.rt.Live()); n != 1 {
		t.Errorf("Live lists %d kernels, want 1", n)
	}
}

func TestConcurrentFirstCreatesStartOneProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("sleep")
	h.Pull("sleep")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := h.rt.Create(context.Background(), s); err != nil {
				t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
	if got := settledProcs(t, s.Kernel); len(got) != 1 {
		t.Errorf("kernel processes = %v, want exactly one", got)
	}
}

func TestSignalDeathReportsTheSignal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("self-signal")
	h.Start(s)
	ev := h.rec.Exit(t, s.Kernel)
	if ev.Reason != domain.ReasonSignaled || runtimetest.Code(ev) != 128+10 || ev.Message != "killed by signal SIGUSR1" {
		t.Errorf("exit event = %+v, want killed by signal SIGUSR1, code 138", ev)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestHTTPEchoAnswers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("http-echo")
	if err := h.rt.Pull(context.Background(), "http-echo"); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.Create(context.Background(), s); !errors.Is(err, runtime.ErrInvalidSpec) {
		t.Fatalf("Create(http-echo) without a port = %v, want ErrInvalidSpec", err)
	}
	s.Port = freePort(t)
	h.Start(s)

	url := fmt.Sprintf("http://127.0.0.1:%d/hello?x=1", s.Port)
	client := &http.Client{Timeout: 2 * time.Second}
	var body []byte
	runtimetest.Eventually(t, waitLimit, "http-echo answers", func() bool {
		resp, err := client.Post(url, "text/plain", strings.NewReader("ping"))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == http.StatusOK
	})
	var got struct {
		Method, Path, Query, Body string
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("echo body %q: %v", body, err)
	}
	if got.Method != "POST" || got.Path != "/hello" || got.Query != "x=1" || got.Body != "ping" {
		t.Errorf("echo = %+v", got)
	}
	// The port it was given is reported, on kernel_started and in Live, so
	// the manager can show and proxy it.
	want := []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: s.Port}}
	started := h.rec.WaitFor(t, "kernel_started", func(e domain.KernelEvent) bool {
		return e.Kind == domain.EventKernelStarted && e.Kernel == s.Kernel
	})
	if diff := cmp.Diff(want, started.ServicePorts); diff != "" {
		t.Errorf("kernel_started's ports (-want +got):\n%s", diff)
	}
	if live := h.rt.Live(); len(live) != 1 || !cmp.Equal(want, live[0].Ports) {
		t.Errorf("Live = %+v, want the kernel with its port", live)
	}
	// Its log says where it listens and what it was asked.
	rc, err := h.rt.Logs(s.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(log), fmt.Sprintf("http-echo: listening on http://127.0.0.1:%d", s.Port)) ||
		!strings.Contains(string(log), "http-echo: POST /hello?x=1 from 127.0.0.1:") {
		t.Errorf("http-echo's log:\n%s", log)
	}

	h.Destroy(s.Kernel, 5*time.Second)
	ev := h.rec.Exit(t, s.Kernel)
	// It shuts down cleanly on SIGTERM.
	if ev.Reason != domain.ReasonDestroyed || runtimetest.Code(ev) != 0 {
		t.Errorf("exit event = %+v, want destroyed with code 0", ev)
	}
}

func TestCommandOverride(t *testing.T) {
	t.Parallel()
	off := newHarness(t)
	s := off.spec("sleep")
	s.Command = []string{"sh", "-c", "exit 9"}
	off.Pull("sleep")
	if err := off.rt.Create(context.Background(), s); !errors.Is(err, runtime.ErrInvalidSpec) {
		t.Fatalf("Create with a command on a runtime that forbids it = %v, want ErrInvalidSpec", err)
	}

	on := newHarness(t, func(c *process.Config) { c.AllowCommand = true })
	s = on.spec("sleep")
	s.Command = []string{"sh", "-c", "exit 9"}
	on.Start(s)
	if ev := on.rec.Exit(t, s.Kernel); runtimetest.Code(ev) != 9 {
		t.Errorf("exit event = %+v, want code 9 from the override", ev)
	}
}

func TestWithoutCgroupsCreateStillWorks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *process.Config) { c.Cgroups.Disable = true })
	for _, st := range h.rt.Enforcement() {
		if st.Enforced || !strings.Contains(st.Detail, "disabled") {
			t.Errorf("Enforcement %+v, want not enforced with the reason", st)
		}
	}
	if n := len(h.rt.Enforcement()); n != 3 {
		t.Errorf("Enforcement reports %d limits, want mem, cpu and pids", n)
	}
	s := h.spec("sleep")
	s.Registry = domain.DefaultRegistry()
	s.Slots, _ = s.Registry.ParseSlots(map[string]string{"mem": "64m", "cpu": "0.5"})
	h.Start(s)
	if _, ok := h.Live(s.Kernel); !ok {
		t.Fatal("kernel not running")
	}
	h.Destroy(s.Kernel, time.Second)
}

func TestCloseLeavesNoProcesses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *process.Config) { c.CloseGrace = 200 * time.Millisecond })
	rt, rec := h.rt, h.rec
	var ids []domain.KernelID
	for _, image := range []string{"sleep", "stubborn", "forker", "sleep"} {
		s := h.spec(image)
		h.Start(s)
		ids = append(ids, s.Kernel)
	}
	for _, id := range ids[1:3] {
		runtimetest.Eventually(t, waitLimit, string(id)+" ready", func() bool { return strings.Contains(h.Logs(id), "ready") })
	}
	// sleep 1, stubborn 2, forker 3, sleep 1; children fork and exec on
	// their own time.
	runtimetest.Eventually(t, waitLimit, "all 7 kernel processes visible", func() bool { return len(kernelProcs(t, ids...)) == 7 })

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := rt.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := kernelProcs(t, ids...); len(got) != 0 {
		t.Errorf("after Close, kernel processes remain: %v", got)
	}
	if got := rt.Live(); len(got) != 0 {
		t.Errorf("after Close, Live = %+v", got)
	}
	// Close delivers the events it caused before returning.
	exits := 0
	for _, e := range rec.All() {
		if e.Kind == domain.EventKernelTerminated {
			exits++
		}
	}
	if exits != len(ids) {
		t.Errorf("%d exit events delivered by Close, want %d", exits, len(ids))
	}
	if err := rt.Pull(context.Background(), "sleep"); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Pull after Close = %v, want ErrClosed", err)
	}
	if err := rt.Create(context.Background(), h.spec("sleep")); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Create after Close = %v, want ErrClosed", err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRuntimesOnOneMachineKeepTheirKernels: New removes what an earlier run
// left in its parent cgroup, so two runtimes started at once on one machine
// (two dev modes, tests in parallel) must not share it. With the default
// name, derived from the data dir, a second runtime leaves the first one's
// kernels alone.
func TestRuntimesOnOneMachineKeepTheirKernels(t *testing.T) {
	t.Parallel()
	defaultName := func(c *process.Config) { c.Cgroups.Name = "" }
	first := newHarness(t, defaultName)
	s := first.spec("sleep")
	first.Start(s)
	if len(settledProcs(t, s.Kernel)) != 1 {
		t.Fatal("the first runtime's kernel did not start")
	}
	second := newHarness(t, defaultName)
	if first.rt.Enforcement()[0].Detail == second.rt.Enforcement()[0].Detail && first.rt.Enforcement()[0].Enforced {
		t.Fatalf("two runtimes share a parent cgroup: %s", first.rt.Enforcement()[0].Detail)
	}
	time.Sleep(200 * time.Millisecond) // a kill by the second New would land within this
	if st, ok := first.Live(s.Kernel); !ok || !st.Running || len(kernelProcs(t, s.Kernel)) != 1 {
		t.Fatalf("the first runtime's kernel died when a second runtime started: %+v", st)
	}
	first.Destroy(s.Kernel, time.Second)
}
