package slurm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/slurm"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// fakeJob is the one job id the fake sbatch hands out.
const fakeJob = "4242"

// fakeSlurm is a SLURM whose squeue prints what the test sets: states the
// one-node CI cluster cannot produce on demand (PREEMPTED, a stop seen for
// as long as the test likes). sbatch submits nothing, scancel logs its
// call and marks the job cancelled, scontrol knows no job.
type fakeSlurm struct {
	t        *testing.T
	bin, dir string // the fake programs; the runtime's work directory
	rt       *slurm.Runtime
	rec      *runtimetest.Recorder
	d        runtimetest.Driver
}

func newFakeSlurm(t *testing.T) *fakeSlurm {
	t.Helper()
	bin := t.TempDir()
	scripts := map[string]string{
		"sbatch":   "echo " + fakeJob + "\n",
		"squeue":   "cat '" + bin + "/squeue.out' 2>/dev/null\n",
		"scancel":  "echo \"$*\" >>'" + bin + "/scancel.log'\nsed -i 's/^\\([0-9]*\\)|[A-Z_]*|/\\1|CANCELLED|/' '" + bin + "/squeue.out'\n",
		"scontrol": "echo 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	rec := runtimetest.NewRecorder(30 * time.Second)
	rt := open(t, rec.Sink, func(c *slurm.Config) {
		c.WorkDir = dir
		c.Commands = slurm.Commands{Sbatch: bin + "/sbatch", Squeue: bin + "/squeue", Scancel: bin + "/scancel",
			Scontrol: bin + "/scontrol"}
	})
	return &fakeSlurm{t: t, bin: bin, dir: dir, rt: rt, rec: rec, d: runtimetest.Driver{T: t, Runtime: rt, Wait: 30 * time.Second}}
}

// set makes squeue list the job in state with SLURM's raw exit status.
func (f *fakeSlurm) set(state, exitStatus string) {
	f.t.Helper()
	tmp := filepath.Join(f.bin, "squeue.out.tmp")
	line := fakeJob + "|" + state + "|None|" + exitStatus + "|x\n"
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(f.bin, "squeue.out")); err != nil {
		f.t.Fatal(err)
	}
}

// running starts a sleep kernel whose job SLURM runs.
func (f *fakeSlurm) running() runtime.Spec {
	f.t.Helper()
	spec := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k-fake", Session: "s-fake", Image: "sleep"}}
	f.set("RUNNING", "0")
	f.d.Start(spec)
	f.rec.WaitFor(f.t, "start", runtimetest.IsStart(spec.Kernel))
	return spec
}

// writeStatus plays the job script: the kernel exited with code.
func (f *fakeSlurm) writeStatus(id domain.KernelID, code string) {
	f.t.Helper()
	path := filepath.Join(f.dir, string(id), "run-"+string(id)+".status")
	if err := os.WriteFile(path, []byte(code+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// A preempted job is never a success: SLURM's SIGTERM may let the kernel
// exit 0 (its status file says 0) or SLURM may report 0 itself, and the
// kernel still ends with a non-zero code saying SLURM preempted it. A
// completed job with code 0 stays a success.
func TestPreemptedIsNeverSuccess(t *testing.T) {
	for _, c := range []struct {
		name, state, status string
		wantZero            bool
		wantMsg             string
	}{
		{"preempted, status file 0", "PREEMPTED", "0", false, "preempted by SLURM"},
		{"preempted, SLURM says 0", "PREEMPTED", "", false, "preempted by SLURM"},
		{"timeout, status file 0", "TIMEOUT", "0", false, "ran past its SLURM time limit"},
		{"cancelled by hand, status file 0", "CANCELLED", "0", false, "cancelled in SLURM"},
		{"completed, status file 0", "COMPLETED", "0", true, "exited with code 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeSlurm(t)
			spec := f.running()
			if c.status != "" {
				f.writeStatus(spec.Kernel, c.status)
			}
			f.set(c.state, "0")
			ev := f.rec.Exit(t, spec.Kernel)
			code := runtimetest.Code(ev)
			if (code == 0) != c.wantZero || code < 0 {
				t.Errorf("%s ended with code %d; want zero: %v", c.state, code, c.wantZero)
			}
			if !strings.Contains(ev.Message, c.wantMsg) {
				t.Errorf("%s ended with message %q, want it to say %q", c.state, ev.Message, c.wantMsg)
			}
		})
	}
}

// A stopped job (scancel --signal=STOP) is paused, not ended: its kernel
// stays running through many polls, nothing cancels it, and after SIGCONT
// it ends as any job does.
func TestStoppedJobIsNotEnded(t *testing.T) {
	for _, state := range []string{"STOPPED", "ST"} {
		t.Run(state, func(t *testing.T) {
			f := newFakeSlurm(t)
			spec := f.running()
			f.set(state, "0")
			time.Sleep(5 * poll)
			if st, ok := f.d.Live(spec.Kernel); !ok || !st.Running {
				t.Fatalf("stopped: Live has %+v (listed %v), want running", st, ok)
			}
			if n := f.rec.Count(runtimetest.IsExit(spec.Kernel)); n != 0 {
				t.Fatalf("%d exits reported for a stopped job", n)
			}
			if _, err := os.Stat(filepath.Join(f.bin, "scancel.log")); err == nil {
				t.Fatalf("scancel was called for a stopped job")
			}
			f.set("RUNNING", "0")
			time.Sleep(3 * poll)
			if st, ok := f.d.Live(spec.Kernel); !ok || !st.Running {
				t.Fatalf("continued: Live has %+v (listed %v), want running", st, ok)
			}
			f.writeStatus(spec.Kernel, "0")
			f.set("COMPLETED", "0")
			if ev := f.rec.Exit(t, spec.Kernel); runtimetest.Code(ev) != 0 || ev.Reason != domain.ReasonExited {
				t.Errorf("after SIGCONT the job ended with %+v, want exited with code 0", ev)
			}
			if n := f.rec.Count(runtimetest.IsStart(spec.Kernel)); n != 1 {
				t.Errorf("%d kernel_started events, want 1", n)
			}
		})
	}
}
