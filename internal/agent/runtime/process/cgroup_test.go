package process_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// requireLimits skips the test where the machine cannot enforce the named
// limits, except under CI, whose machine runs as root with writable v1
// cgroups and so must enforce them.
func requireLimits(t *testing.T, rt *process.Runtime, names ...string) {
	t.Helper()
	for _, st := range rt.Enforcement() {
		if !slices.Contains(names, st.Limit) || st.Enforced {
			continue
		}
		msg := fmt.Sprintf("the %s limit cannot be enforced here (%s)", st.Limit, st.Detail)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; CI=true, where cgroups must work (root, writable cgroup v1)", msg)
		}
		t.Skipf("%s; run as root with writable cgroup v1 controllers, or a delegated v2 cgroup, to test limits", msg)
	}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func limitRegistry(t *testing.T) *domain.Registry {
	t.Helper()
	reg, err := domain.NewRegistry(append(domain.DefaultSlotTypes(), domain.SlotType{Name: "pids", Kind: domain.KindCount})...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestCgroupLimitsAreSet(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	requireLimits(t, h.rt, "mem", "cpu", "pids")

	s := h.spec("sleep")
	s.Registry = limitRegistry(t)
	var err error
	s.Slots, err = s.Registry.ParseSlots(map[string]string{"mem": "64m", "cpu": "0.5", "pids": "32"})
	if err != nil {
		t.Fatal(err)
	}
	h.Start(s)
	pid, ok := h.rt.PID(s.Kernel)
	if !ok {
		t.Fatal("kernel not running")
	}
	// sh execs sleep, which keeps the membership.
	runtimetest.Eventually(t, waitLimit, "sh execs sleep", func() bool {
		return readTrim(t, fmt.Sprintf("/proc/%d/comm", pid)) == "sleep"
	})

	dirs := map[string]string{}
	for _, ctl := range []string{"memory", "cpu", "pids"} {
		dir, err := process.CgroupDirOf(pid, ctl)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(dir) != string(s.Kernel) {
			t.Fatalf("%s cgroup of the kernel is %s, want one named after the kernel", ctl, dir)
		}
		dirs[ctl] = dir
		// The thread that forked it went home: v1 would list the agent
		// while any thread of it were left there.
		if got := readTrim(t, filepath.Join(dir, "cgroup.procs")); got != strconv.Itoa(pid) {
			t.Errorf("%s cgroup holds processes %q, want the kernel's %d alone", ctl, got, pid)
		}
	}
	if dir := dirs["memory"]; fileExists(filepath.Join(dir, "memory.limit_in_bytes")) {
		if got := readTrim(t, filepath.Join(dir, "memory.limit_in_bytes")); got != "67108864" {
			t.Errorf("memory.limit_in_bytes = %s, want 67108864", got)
		}
		quota, _ := strconv.ParseFloat(readTrim(t, filepath.Join(dirs["cpu"], "cpu.cfs_quota_us")), 64)
		period, _ := strconv.ParseFloat(readTrim(t, filepath.Join(dirs["cpu"], "cpu.cfs_period_us")), 64)
		if period == 0 || quota/period != 0.5 {
			t.Errorf("cfs quota/period = %v/%v, want 0.5", quota, period)
		}
	} else { // v2
		if got := readTrim(t, filepath.Join(dir, "memory.max")); got != "67108864" {
			t.Errorf("memory.max = %s, want 67108864", got)
		}
		if got := readTrim(t, filepath.Join(dirs["cpu"], "cpu.max")); got != "50000 100000" {
			t.Errorf("cpu.max = %s, want 50000 100000", got)
		}
	}
	if got := readTrim(t, filepath.Join(dirs["pids"], "pids.max")); got != "32" {
		t.Errorf("pids.max = %s, want 32", got)
	}

	h.Destroy(s.Kernel, time.Second)
	for ctl, dir := range dirs {
		if fileExists(dir) {
			t.Errorf("%s cgroup %s still exists after Destroy", ctl, dir)
		}
	}
}

func TestPidsMaxDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *process.Config) { c.Cgroups.PidsMax = 50 })
	requireLimits(t, h.rt, "pids")
	s := h.spec("sleep")
	h.Start(s)
	pid, _ := h.rt.PID(s.Kernel)
	dir, err := process.CgroupDirOf(pid, "pids")
	if err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(dir, "pids.max")); got != "50" {
		t.Errorf("pids.max = %s, want the configured default 50", got)
	}
}

// TestProgramStartsInItsCgroup: the kernel's process is born in its
// cgroups, so a program that reads its cgroups first thing finds the
// kernel's, not the agent's.
func TestProgramStartsInItsCgroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *process.Config) {
		c.Catalog.Images["cgroups"] = process.Entry{Program: "cat", Args: func(string, runtime.Spec) ([]string, error) {
			return []string{"/proc/self/cgroup"}, nil
		}}
	})
	requireLimits(t, h.rt, "mem", "cpu", "pids")
	s := h.spec("cgroups")
	h.Start(s)
	if ev := h.rec.Exit(t, s.Kernel); runtimetest.Code(ev) != 0 {
		t.Fatalf("cat exited %+v; logs:\n%s", ev, h.Logs(s.Kernel))
	}
	// "ID:CONTROLLERS:PATH", the v2 hierarchy's CONTROLLERS empty.
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(h.Logs(s.Kernel)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			t.Fatalf("cgroup line %q", line)
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			paths[ctl] = parts[2]
		}
	}
	for _, ctl := range []string{"memory", "cpu", "pids"} {
		path, ok := paths[ctl]
		if !ok {
			path = paths[""]
		}
		if filepath.Base(path) != string(s.Kernel) {
			t.Errorf("the program started in %s cgroup %q, want the kernel's", ctl, path)
		}
	}
}

// TestPidsCapOfOne: a kernel capped at one process starts it, and that
// process can fork nothing.
func TestPidsCapOfOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *process.Config) {
		c.Catalog.Images["fork-once"] = process.Entry{Program: "sh", Args: func(string, runtime.Spec) ([]string, error) {
			return []string{"-c", "echo started; /bin/true; echo forked"}, nil
		}}
	})
	requireLimits(t, h.rt, "pids")
	s := h.spec("fork-once")
	s.Registry = limitRegistry(t)
	var err error
	if s.Slots, err = s.Registry.ParseSlots(map[string]string{"pids": "1"}); err != nil {
		t.Fatal(err)
	}
	h.Start(s)
	ev := h.rec.Exit(t, s.Kernel)
	out := h.Logs(s.Kernel)
	if runtimetest.Code(ev) == 0 || !strings.Contains(out, "started") || strings.Contains(out, "forked") {
		t.Errorf("exit %+v, output:\n%s\nwant it started and refused the fork", ev, out)
	}
}

func TestOOMKillIsReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	requireLimits(t, h.rt, "mem")
	s := h.spec("alloc")
	s.Registry = domain.DefaultRegistry()
	s.Slots, _ = s.Registry.ParseSlots(map[string]string{"mem": "32m"})
	h.Start(s)
	ev := h.rec.Exit(t, s.Kernel)
	if ev.Reason != domain.ReasonOOMKilled || runtimetest.Code(ev) != 128+9 {
		t.Errorf("exit event = %+v, want oom-killed with code 137; logs:\n%s", ev, h.Logs(s.Kernel))
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
