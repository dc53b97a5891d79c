package slurm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/slurm"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// startWaiter makes Create wait for the kernel's start, as the Runtime
// contract words it. The slurm runtime returns once sbatch has taken the
// job, since a job may queue for hours; the conformance suite checks Live
// right after Create, so it runs through this adapter.
type startWaiter struct{ *slurm.Runtime }

func (s startWaiter) Create(ctx context.Context, spec runtime.Spec) error {
	if err := s.Runtime.Create(ctx, spec); err != nil {
		return err
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		for _, st := range s.Live() {
			if st.ID == spec.Kernel {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// slurmWait bounds each wait for SLURM to act. slurmd loads the job
// user's login environment for every launch (sbatch --export=NONE); on the
// CI machines root's login shell runs pyenv, whose rehash lock makes those
// loads take turns at about a second each, so the launches a package's
// tests queue can back up well past half a minute.
const slurmWait = 2 * time.Minute

func TestConformance(t *testing.T) {
	requireSlurm(t)
	runtimetest.Run(t, runtimetest.DevImages(runtimetest.Kit{
		Open: func(t *testing.T, sink runtime.Sink) runtime.Runtime {
			return startWaiter{open(t, sink, nil)}
		},
		Wait: slurmWait,
	}))
}

type env struct {
	t   *testing.T
	rt  *slurm.Runtime
	rec *runtimetest.Recorder
	d   runtimetest.Driver
}

func newEnv(t *testing.T, edit func(*slurm.Config)) *env {
	requireSlurm(t)
	rec := runtimetest.NewRecorder(slurmWait)
	rt := open(t, rec.Sink, edit)
	return &env{t: t, rt: rt, rec: rec, d: runtimetest.Driver{T: t, Runtime: rt, Wait: slurmWait}}
}

func (e *env) spec(image string, env map[string]string) runtime.Spec {
	id := domain.KernelID("k-" + runtimetest.RandomHex(e.t, 4))
	return runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: id, Session: "s-" + domain.SessionID(id), Image: image, Env: env}}
}

// jobOf is the kernel's job id, from its state file.
func jobOf(t *testing.T, dir string, id domain.KernelID) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, string(id), "job.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), `"job_id":"`)
	job, _, _ := strings.Cut(rest, `"`)
	if job == "" {
		t.Fatalf("no job id in %s", b)
	}
	return job
}

func slurmState(t *testing.T, job string) string {
	t.Helper()
	out, err := exec.Command("squeue", "-h", "-j", job, "--states=all", "-o", "%T").Output()
	if err != nil {
		t.Fatalf("squeue -j %s: %v", job, err)
	}
	return strings.TrimSpace(string(out))
}

// Real jobs end with their codes: exit:0 and exit:3, from the status file.
func TestExitCodes(t *testing.T) {
	e := newEnv(t, nil)
	for _, code := range []int{0, 3} {
		spec := e.spec(fmt.Sprintf("exit:%d", code), map[string]string{"SOKOVAN_EXIT_AFTER": "0"})
		e.d.Start(spec)
		ev := e.rec.Exit(t, spec.Kernel)
		if got := runtimetest.Code(ev); got != code || ev.Reason != domain.ReasonExited {
			t.Errorf("exit:%d ended with code %d, reason %q; want %d, %q", code, got, ev.Reason, code, domain.ReasonExited)
		}
		e.rec.WaitFor(t, "start of "+string(spec.Kernel), runtimetest.IsStart(spec.Kernel))
	}
}

// A sleep job runs until cancelled: Destroy is scancel, reported as
// destroyed, and SLURM shows the job cancelled.
func TestSleepRunsUntilDestroyed(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *slurm.Config) { c.WorkDir = dir })
	spec := e.spec("sleep", nil)
	e.d.Start(spec)
	e.rec.WaitFor(t, "start", runtimetest.IsStart(spec.Kernel))
	job := jobOf(t, dir, spec.Kernel)
	time.Sleep(3 * poll)
	if st, ok := e.d.Live(spec.Kernel); !ok || !st.Running {
		t.Fatalf("Live has %+v (listed %v), want running", st, ok)
	}
	e.d.Destroy(spec.Kernel, 5*time.Second)
	ev := e.rec.Exit(t, spec.Kernel)
	if ev.Reason != domain.ReasonDestroyed {
		t.Errorf("exit = %+v, want reason destroyed", ev)
	}
	// TERM reached the kernel: the script recorded 143 rather than SLURM
	// killing it.
	if got := runtimetest.Code(ev); got != 143 {
		t.Errorf("exit code %d, want 143 (SIGTERM through the script)", got)
	}
	if st := slurmState(t, job); st != "CANCELLED" && st != "COMPLETED" && st != "FAILED" {
		t.Errorf("SLURM state of job %s = %q, want it ended", job, st)
	}
}

// A job that asks for more CPUs than the partition has stays pending: the
// kernel stays in creation, and Queued says why.
func TestOversizedJobStaysQueued(t *testing.T) {
	e := newEnv(t, nil)
	reg := domain.DefaultRegistry()
	slots, err := reg.ParseSlots(map[string]string{"cpu": "64", "mem": "64m"})
	if err != nil {
		t.Fatal(err)
	}
	spec := e.spec("sleep", nil)
	spec.Slots, spec.Registry = slots, reg
	e.d.Start(spec)
	var note string
	wait(t, "a SLURM reason", func() bool {
		q := e.rt.Queued()
		if len(q) == 1 && q[0].Note != "queued in SLURM: submitted" {
			note = q[0].Note
			return true
		}
		return false
	})
	if !strings.HasPrefix(note, "queued in SLURM: ") || strings.TrimPrefix(note, "queued in SLURM: ") == "" {
		t.Errorf("note = %q, want queued in SLURM: <reason>", note)
	}
	t.Logf("note: %s", note)
	time.Sleep(3 * poll)
	if _, ok := e.d.Live(spec.Kernel); ok {
		t.Errorf("a queued kernel is listed by Live")
	}
	if n := e.rec.Count(runtimetest.IsStart(spec.Kernel)); n != 0 {
		t.Errorf("%d kernel_started events for a queued job", n)
	}
	e.d.Destroy(spec.Kernel, time.Second)
	if len(e.rt.Queued()) != 0 {
		t.Errorf("still queued after Destroy: %+v", e.rt.Queued())
	}
}

// scontrol suspend and resume leave a started kernel running: SUSPENDED
// is not an end.
func TestSuspendResumeKeepsRunning(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *slurm.Config) { c.WorkDir = dir })
	spec := e.spec("sleep", nil)
	e.d.Start(spec)
	e.rec.WaitFor(t, "start", runtimetest.IsStart(spec.Kernel))
	job := jobOf(t, dir, spec.Kernel)
	for _, verb := range []string{"suspend", "resume"} {
		if out, err := exec.Command("scontrol", verb, job).CombinedOutput(); err != nil {
			t.Fatalf("scontrol %s %s: %v: %s", verb, job, err, out)
		}
		want := map[string]string{"suspend": "SUSPENDED", "resume": "RUNNING"}[verb]
		wait(t, "job "+want, func() bool { return slurmState(t, job) == want })
		time.Sleep(3 * poll)
		if st, ok := e.d.Live(spec.Kernel); !ok || !st.Running {
			t.Fatalf("after %s, Live has %+v (listed %v), want running", verb, st, ok)
		}
	}
	if n := e.rec.Count(runtimetest.IsExit(spec.Kernel)); n != 0 {
		t.Errorf("%d exits reported for a suspended and resumed job", n)
	}
}

// scancel --signal=STOP and --signal=CONT leave a started kernel running:
// STOPPED is a pause that keeps the job's allocation, not an end, and the
// kernel is destroyed as any other afterwards.
func TestStopContKeepsRunning(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *slurm.Config) { c.WorkDir = dir })
	spec := e.spec("sleep", nil)
	e.d.Start(spec)
	e.rec.WaitFor(t, "start", runtimetest.IsStart(spec.Kernel))
	job := jobOf(t, dir, spec.Kernel)
	for _, sig := range []string{"STOP", "CONT"} {
		want := map[string]string{"STOP": "STOPPED", "CONT": "RUNNING"}[sig]
		// slurmctld ignores the signal while the job is still being
		// launched, though squeue already says RUNNING: send it again
		// until the state shows it.
		wait(t, "job "+want, func() bool {
			if slurmState(t, job) == want {
				return true
			}
			if out, err := exec.Command("scancel", "--signal="+sig, job).CombinedOutput(); err != nil {
				t.Fatalf("scancel --signal=%s %s: %v: %s", sig, job, err, out)
			}
			time.Sleep(poll)
			return false
		})
		time.Sleep(3 * poll)
		if st, ok := e.d.Live(spec.Kernel); !ok || !st.Running {
			t.Fatalf("after SIG%s, Live has %+v (listed %v), want running", sig, st, ok)
		}
		if n := e.rec.Count(runtimetest.IsExit(spec.Kernel)); n != 0 {
			t.Fatalf("%d exits reported after SIG%s", n, sig)
		}
	}
	e.d.Destroy(spec.Kernel, 5*time.Second)
	if ev := e.rec.Exit(t, spec.Kernel); ev.Reason != domain.ReasonDestroyed {
		t.Errorf("exit = %+v, want reason destroyed", ev)
	}
}

// With squeue failing, a running kernel stays running and one that ends is
// ended from its status file.
func TestSqueueFailureFallsBackToStatusFiles(t *testing.T) {
	bin := t.TempDir()
	sq := shim(t, bin, "squeue")
	e := newEnv(t, func(c *slurm.Config) { c.Commands.Squeue = sq })
	sleeper := e.spec("sleep", nil)
	exiter := e.spec("exit:7", map[string]string{"SOKOVAN_EXIT_AFTER": "3"})
	e.d.Start(sleeper)
	e.d.Start(exiter)
	e.rec.WaitFor(t, "start", runtimetest.IsStart(sleeper.Kernel))
	e.rec.WaitFor(t, "start", runtimetest.IsStart(exiter.Kernel))
	if err := os.WriteFile(sq+".fail", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ev := e.rec.Exit(t, exiter.Kernel)
	if runtimetest.Code(ev) != 7 || !strings.Contains(ev.Message, "squeue failed") {
		t.Errorf("exit = %+v, want code 7 from the status file, squeue failed", ev)
	}
	time.Sleep(3 * poll)
	if st, ok := e.d.Live(sleeper.Kernel); !ok || !st.Running {
		t.Errorf("during the outage Live has %+v (listed %v), want running", st, ok)
	}
	_ = os.Remove(sq + ".fail")
}

// An agent restart re-adopts its jobs: a new runtime on the same work
// directory lists the running job, with its start, and can destroy it.
func TestRecoverReadoptsRunningJobs(t *testing.T) {
	requireSlurm(t)
	dir := t.TempDir()
	rec1 := runtimetest.NewRecorder(slurmWait)
	rt1, err := slurm.New(slurm.Config{WorkDir: dir, Partition: partition, PollInterval: poll, Sink: rec1.Sink})
	if err != nil {
		t.Fatal(err)
	}
	d1 := runtimetest.Driver{T: t, Runtime: rt1, Wait: slurmWait}
	run := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: domain.KernelID("rec-" + runtimetest.RandomHex(t, 4)),
		Session: "s", Image: "sleep"}}
	done := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: domain.KernelID("recx-" + runtimetest.RandomHex(t, 4)),
		Session: "s", Image: "exit:5", Env: map[string]string{"SOKOVAN_EXIT_AFTER": "2"}}}
	d1.Start(run)
	d1.Start(done)
	rec1.WaitFor(t, "start", runtimetest.IsStart(run.Kernel))
	rec1.WaitFor(t, "start", runtimetest.IsStart(done.Kernel))
	before, _ := d1.Live(run.Kernel)
	slurm.Abandon(rt1) // the agent dies; its jobs go on
	time.Sleep(3 * time.Second)

	e := newEnv(t, func(c *slurm.Config) { c.WorkDir = dir })
	if err := e.rt.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, ok := e.d.Live(run.Kernel)
	if !ok || !st.Running || !st.StartedAt.Equal(before.StartedAt) {
		t.Fatalf("after Recover Live has %+v (listed %v), want running since %v", st, ok, before.StartedAt)
	}
	ev := e.rec.Exit(t, done.Kernel)
	if runtimetest.Code(ev) != 5 {
		t.Errorf("the job that ended while the agent was away: %+v, want code 5", ev)
	}
	if n := e.rec.Count(runtimetest.IsStart(run.Kernel)); n != 0 {
		t.Errorf("a re-adopted running kernel was reported started again (%d)", n)
	}
	e.d.Destroy(run.Kernel, time.Second)
	if ev := e.rec.Exit(t, run.Kernel); ev.Reason != domain.ReasonDestroyed {
		t.Errorf("exit = %+v, want destroyed", ev)
	}
}

// Polling is batched: with N jobs the runtime calls squeue once per
// interval, not once per job.
func TestSqueueIsBatched(t *testing.T) {
	n := 50
	if testing.Short() {
		n = 20
	}
	bin := t.TempDir()
	sq := shim(t, bin, "squeue")
	e := newEnv(t, func(c *slurm.Config) { c.Commands.Squeue = sq })
	e.d.Pull("sleep")
	var ids []domain.KernelID
	for range n {
		spec := e.spec("sleep", nil)
		e.d.Create(spec)
		ids = append(ids, spec.Kernel)
	}
	wait(t, "every job running", func() bool { return len(e.rt.Live()) == n })
	before := calls(t, sq)
	window := 10 * poll
	time.Sleep(window)
	got := calls(t, sq) - before
	t.Logf("%d jobs: %d squeue calls in %v (poll interval %v)", n, got, window, poll)
	if max := int(window/poll) + 2; got > max || got == 0 {
		t.Errorf("%d squeue calls in %v for %d jobs, want 1 to %d (one per interval)", got, window, n, max)
	}
	for _, id := range ids {
		e.d.Destroy(id, 0)
	}
}

func calls(t *testing.T, shim string) int {
	t.Helper()
	b, err := os.ReadFile(shim + ".log")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// A slurmctld restart mid-run loses nothing: while the controller is down
// squeue fails, a running job stays running (an outage never ends a kernel
// by itself), and a job that ends meanwhile is found by its status file;
// once the controller is back, with its saved state, polling carries on.
func TestSlurmctldRestartLosesNothing(t *testing.T) {
	e := newEnv(t, nil)
	sleeper := e.spec("sleep", nil)
	exiter := e.spec("exit:5", map[string]string{"SOKOVAN_EXIT_AFTER": "3"})
	e.d.Start(sleeper)
	e.d.Start(exiter)
	e.rec.WaitFor(t, "start", runtimetest.IsStart(sleeper.Kernel))
	e.rec.WaitFor(t, "start", runtimetest.IsStart(exiter.Kernel))

	if out, err := exec.Command("pkill", "-x", "slurmctld").CombinedOutput(); err != nil {
		t.Fatalf("pkill slurmctld: %v: %s", err, out)
	}
	// Started again however the test ends, so the tests after this one
	// find a controller.
	restarted := false
	restart := func() {
		if restarted {
			return
		}
		restarted = true
		cmd := exec.Command("slurmctld")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("start slurmctld: %v: %s", err, out)
		}
		wait(t, "slurmctld up", func() bool {
			out, err := exec.Command("scontrol", "ping").CombinedOutput()
			return err == nil && strings.Contains(string(out), "is UP")
		})
	}
	t.Cleanup(restart)
	wait(t, "slurmctld down", func() bool { return exec.Command("pgrep", "-x", "slurmctld").Run() != nil })

	ev := e.rec.Exit(t, exiter.Kernel)
	if runtimetest.Code(ev) != 5 {
		t.Errorf("exit during the outage = %+v, want code 5 from the status file", ev)
	}
	time.Sleep(5 * poll)
	if st, ok := e.d.Live(sleeper.Kernel); !ok || !st.Running {
		t.Errorf("during the outage Live has %+v (listed %v), want running", st, ok)
	}

	restart()
	time.Sleep(5 * poll)
	if st, ok := e.d.Live(sleeper.Kernel); !ok || !st.Running {
		t.Errorf("after the restart Live has %+v (listed %v), want running", st, ok)
	}
	if n := e.rec.Count(runtimetest.IsExit(sleeper.Kernel)); n != 0 {
		t.Errorf("%d exits reported for the job that kept running", n)
	}
	if n := e.rec.Count(runtimetest.IsExit(exiter.Kernel)); n != 1 {
		t.Errorf("%d exits reported for the job that ended, want 1", n)
	}
	e.d.Destroy(sleeper.Kernel, 5*time.Second)
	if ev := e.rec.Exit(t, sleeper.Kernel); ev.Reason != domain.ReasonDestroyed {
		t.Errorf("destroy after the restart = %+v, want reason destroyed", ev)
	}
}

// A session's time limit becomes its job's --time, rounded up to whole
// minutes, over the agent's --slurm-time; squeue shows it as SLURM holds
// it (%l, the job's time limit).
func TestSessionTimeLimitIsJobTime(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *slurm.Config) { c.WorkDir = dir; c.TimeLimit = 2 * time.Hour })
	for _, tc := range []struct {
		limit time.Duration
		want  string
	}{
		{90 * time.Second, "2:00"}, // 1.5 min rounds up to 2
		{0, "2:00:00"},             // the agent's --slurm-time
	} {
		spec := e.spec("sleep", nil)
		spec.TimeLimit = tc.limit
		e.d.Start(spec)
		e.rec.WaitFor(t, "start", runtimetest.IsStart(spec.Kernel))
		job := jobOf(t, dir, spec.Kernel)
		out, err := exec.Command("squeue", "-h", "-j", job, "--states=all", "-o", "%l").Output()
		if err != nil {
			t.Fatalf("squeue -j %s: %v", job, err)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("limit %s: job time limit %q, want %q", tc.limit, got, tc.want)
		}
		e.d.Destroy(spec.Kernel, 5*time.Second)
		e.rec.Exit(t, spec.Kernel)
	}
}

// A kernel asking a fraction of a GPU is refused before any job is
// submitted: the manager reads the invalid spec and gives the session up
// rather than retrying.
func TestSharesRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt := open(t, runtimetest.NewRecorder(time.Second).Sink, func(c *slurm.Config) { c.WorkDir = dir })
	reg := domain.DefaultRegistry()
	slots, err := reg.ParseSlots(map[string]string{"cpu": "1", "cuda.shares": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	spec := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k-shares", Session: "s-shares", Image: "sleep"},
		Registry: reg, Slots: slots}
	err = rt.Create(context.Background(), spec)
	if !errors.Is(err, runtime.ErrInvalidSpec) || !strings.Contains(err.Error(), "cuda.shares") {
		t.Fatalf("Create = %v, want an invalid spec naming cuda.shares", err)
	}
	if _, err := os.Stat(filepath.Join(dir, string(spec.Kernel))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused kernel has a directory (%v): a job was prepared", err)
	}
}
