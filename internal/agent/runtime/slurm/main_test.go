package slurm_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/slurm"
)

// partition is the one .ci/services.sh configures.
const partition = "debug"

// poll is short so the suite's wall time stays modest.
const poll = 200 * time.Millisecond

// requireSlurm skips the test without a reachable slurmctld, or fails it
// under CI=true, where .ci/services.sh starts one.
func requireSlurm(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("sbatch")
	if err == nil {
		var out []byte
		out, err = exec.Command("scontrol", "ping").CombinedOutput()
		if err == nil && !strings.Contains(string(out), "is UP") {
			err = errString(strings.TrimSpace(string(out)))
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("slurm tests need a running slurmctld (bash .ci/services.sh slurm): %v", err)
		}
		t.Skipf("no SLURM here (start one with: bash .ci/services.sh slurm): %v", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// open returns a runtime on a fresh work directory, closed after the test.
func open(t *testing.T, sink runtime.Sink, edit func(*slurm.Config)) *slurm.Runtime {
	t.Helper()
	cfg := slurm.Config{WorkDir: t.TempDir(), Partition: partition, PollInterval: poll, LostGrace: time.Second,
		CloseGrace: time.Second, Sink: sink}
	if edit != nil {
		edit(&cfg)
	}
	rt, err := slurm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

// shim writes an executable script named name into dir that logs its
// arguments to dir/name.log, fails while dir/name.fail exists, and
// otherwise runs the real program.
func shim(t *testing.T, dir, name string) string {
	t.Helper()
	requireSlurm(t) // before looking for the command it wraps
	real, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	path := dir + "/" + name
	body := "#!/bin/sh\n" +
		"echo \"$*\" >>'" + path + ".log'\n" +
		"if [ -e '" + path + ".fail' ]; then echo \"" + name + ": error: Unable to contact slurm controller (shim)\" >&2; exit 1; fi\n" +
		"exec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	runtimetest.Eventually(t, 30*time.Second, what, cond)
}
