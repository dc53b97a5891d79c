package slurm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/probe"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/slurm"
)

// A running job is ready only once every probe reaches its success
// threshold: the exec probe fails (past its threshold) until the job's
// work directory holds "ready"; a probe that cannot run stays UNKNOWN and
// keeps a second kernel not ready although its job runs.
func TestReadinessProbes(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(c *slurm.Config) { c.WorkDir = dir })
	fast := 100 * time.Millisecond
	spec := e.spec("sleep", nil)
	spec.Readiness = []probe.Spec{{Exec: []string{"test", "-f", "ready"}, Period: fast, SuccessThreshold: 2, FailureThreshold: 2}}
	broken := e.spec("sleep", nil)
	broken.Readiness = []probe.Spec{{Exec: []string{filepath.Join(dir, "no-such-probe")}, Period: fast}}
	e.d.Start(spec)
	e.d.Start(broken)
	e.rec.WaitFor(t, "start", runtimetest.IsStart(spec.Kernel))

	var st runtime.KernelState
	wait(t, "the probe past its failure threshold", func() bool {
		st, _ = e.d.Live(spec.Kernel)
		return len(st.Probes) == 1 && st.Probes[0].Status == probe.FailedThreshold
	})
	if st.Ready == nil || *st.Ready {
		t.Errorf("Ready = %v with a probe FAILED_THRESHOLD, want false", st.Ready)
	}
	// The job's work directory is where its command runs and where the
	// exec probe looks.
	if err := os.WriteFile(filepath.Join(dir, string(spec.Kernel), "work", "ready"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wait(t, "ready", func() bool {
		st, _ = e.d.Live(spec.Kernel)
		return st.Ready != nil && *st.Ready
	})
	if st.Probes[0].Status != probe.Success || st.Probes[0].Successes < 2 {
		t.Errorf("probe %+v, want SUCCESS after 2 successes", st.Probes[0])
	}

	e.rec.WaitFor(t, "start", runtimetest.IsStart(broken.Kernel))
	wait(t, "a check of the broken probe", func() bool {
		b, _ := e.d.Live(broken.Kernel)
		return len(b.Probes) == 1 && !b.Probes[0].At.IsZero()
	})
	b, _ := e.d.Live(broken.Kernel)
	if b.Probes[0].Status != probe.Unknown || b.Ready == nil || *b.Ready {
		t.Errorf("broken probe: status %s, ready %v; want UNKNOWN, not ready", b.Probes[0].Status, b.Ready)
	}
	e.d.Destroy(spec.Kernel, 0)
	e.d.Destroy(broken.Kernel, 0)
}

// A kernel without probes is ready as soon as its job runs.
func TestNoProbesIsReady(t *testing.T) {
	e := newEnv(t, nil)
	spec := e.spec("sleep", nil)
	e.d.Start(spec)
	e.rec.WaitFor(t, "start", runtimetest.IsStart(spec.Kernel))
	st, _ := e.d.Live(spec.Kernel)
	if st.Ready == nil || !*st.Ready || len(st.Probes) != 0 {
		t.Errorf("Ready %v, probes %v; want ready with none", st.Ready, st.Probes)
	}
	e.d.Destroy(spec.Kernel, 0)
}

// Capacity is read afresh on every call, so a node's change in sinfo is
// seen at the agent's next heartbeat.
func TestCapacityFollowsSinfo(t *testing.T) {
	requireSlurm(t)
	bin := t.TempDir()
	sinfo := filepath.Join(bin, "sinfo")
	write := func(out string) {
		t.Helper()
		if err := os.WriteFile(sinfo, []byte("#!/bin/sh\nprintf '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(`n1|4|8000|(null)|idle\n`)
	rt := open(t, nil, func(c *slurm.Config) { c.Commands.Sinfo = sinfo })
	ctx := context.Background()
	got, err := rt.Capacity(ctx)
	if err != nil || got["cpu"] != "4" || got["mem"] != "8000m" {
		t.Fatalf("Capacity = %v, %v; want cpu 4, mem 8000m", got, err)
	}
	write(`n1|4|8000|(null)|idle\nn2|8|16000|gpu:2|mix\n`)
	got, err = rt.Capacity(ctx)
	if err != nil || got["cpu"] != "12" || got["mem"] != "24000m" || got["cuda.device"] != "2" {
		t.Fatalf("Capacity = %v, %v; want cpu 12, mem 24000m, cuda.device 2", got, err)
	}
}
