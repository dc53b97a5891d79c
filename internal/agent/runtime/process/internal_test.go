package process

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
)

func TestLimitFiles(t *testing.T) {
	t.Parallel()
	l := limits{memBytes: 64 << 20, cpuMilli: 500, pids: 32}
	tests := []struct {
		name string
		ctl  string
		v2   bool
		l    limits
		want []fileValue
	}{
		{"v1 memory: limit then memsw", "memory", false, l, []fileValue{
			{"memory.limit_in_bytes", "67108864", false},
			{"memory.memsw.limit_in_bytes", "67108864", true},
		}},
		{"v2 memory: no swap", "memory", true, l, []fileValue{
			{"memory.max", "67108864", false},
			{"memory.swap.max", "0", true},
		}},
		// 0.5 core = 500 thousandths → 500 × 100000 / 1000 = 50000 µs per 100000.
		{"v1 cpu 0.5", "cpu", false, l, []fileValue{
			{"cpu.cfs_period_us", "100000", false},
			{"cpu.cfs_quota_us", "50000", false},
		}},
		{"v2 cpu 0.5", "cpu", true, l, []fileValue{{"cpu.max", "50000 100000", false}}},
		// 0.001 core would be 100 µs, below the kernel's 1 ms floor.
		{"tiny cpu clamps to 1ms", "cpu", false, limits{cpuMilli: 1}, []fileValue{
			{"cpu.cfs_period_us", "100000", false},
			{"cpu.cfs_quota_us", "1000", false},
		}},
		{"cpu 4 cores", "cpu", true, limits{cpuMilli: 4000}, []fileValue{{"cpu.max", "400000 100000", false}}},
		{"pids", "pids", false, l, []fileValue{{"pids.max", "32", false}}},
		{"nothing requested", "memory", false, limits{}, nil},
		{"no cpu requested", "cpu", true, limits{memBytes: 1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := limitFiles(tc.ctl, tc.v2, tc.l)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(fileValue{})); diff != "" {
				t.Errorf("limitFiles (-want +got):\n%s", diff)
			}
		})
	}
}

// mountinfo as this project's CI machine shows it: v1 controllers, cpu
// and cpuacct mounted apart, a controller-less unified hierarchy, and a
// bind mount of part of the memory hierarchy.
const mountinfo = `22 1 0:20 / /sys rw,nosuid - sysfs sysfs rw
30 22 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 30 0:30 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
35 30 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
36 1 0:29 /jail /mnt/my\040mem rw - cgroup cgroup rw,memory
`

const procCgroup = `9:name=systemd:/
8:pids:/
4:memory:/agents/a1
1:cpu:/
0::/
`

func TestParseMountinfo(t *testing.T) {
	t.Parallel()
	got, err := parseMountinfo(strings.NewReader(mountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []mount{
		{"/", "/sys/fs/cgroup/cpu", "cgroup", []string{"rw", "cpu"}},
		{"/", "/sys/fs/cgroup/cpuacct", "cgroup", []string{"rw", "cpuacct"}},
		{"/", "/sys/fs/cgroup/memory", "cgroup", []string{"rw", "memory"}},
		{"/", "/sys/fs/cgroup/pids", "cgroup", []string{"rw", "pids"}},
		{"/", "/sys/fs/cgroup/unified", "cgroup2", []string{"rw"}},
		{"/jail", "/mnt/my mem", "cgroup", []string{"rw", "memory"}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(mount{})); diff != "" {
		t.Errorf("parseMountinfo (-want +got):\n%s", diff)
	}
}

func TestOwnDir(t *testing.T) {
	t.Parallel()
	mounts, err := parseMountinfo(strings.NewReader(mountinfo))
	if err != nil {
		t.Fatal(err)
	}
	own, err := parseProcCgroup(strings.NewReader(procCgroup))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ctl string
		own       map[string]string
		mounts    []mount
		want      string
		wantErr   string
	}{
		{"memory under the agent's own cgroup", "memory", own, mounts, "/sys/fs/cgroup/memory/agents/a1", ""},
		{"cpu at the root", "cpu", own, mounts, "/sys/fs/cgroup/cpu", ""},
		{"v2", "", own, mounts, "/sys/fs/cgroup/unified", ""},
		{"a bind mount of a subtree", "memory", map[string]string{"memory": "/jail/k"},
			[]mount{{"/jail", "/mnt/m", "cgroup", []string{"memory"}}}, "/mnt/m/k", ""},
		{"a bind mount of another subtree", "memory", map[string]string{"memory": "/jailbreak"},
			[]mount{{"/jail", "/mnt/m", "cgroup", []string{"memory"}}}, "", "no cgroup v1 hierarchy with the memory controller"},
		{"controller not mounted", "blkio", map[string]string{"blkio": "/"}, mounts, "", "no cgroup v1 hierarchy with the blkio controller"},
		{"process not in the hierarchy", "hugetlb", own, mounts, "", "this process is in no hugetlb cgroup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ownDir(tc.mounts, tc.own, tc.ctl)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ownDir = %q, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ownDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	t.Parallel()
	got, err := parseProcCgroup(strings.NewReader("3:cpu,cpuacct:/a\n2:name=systemd:/s\n0::/u\nbogus\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "/a", "cpuacct": "/a", "name=systemd": "/s", "": "/u"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseProcCgroup (-want +got):\n%s", diff)
	}
}

func TestCatalogResolve(t *testing.T) {
	t.Parallel()
	cat := DefaultCatalog("/self")
	cat.Prefixes["exit:long:"] = Entry{Program: "true"}
	tests := []struct {
		image     string
		wantProg  string
		wantParam string
		wantErr   bool
	}{
		{"sleep", "sh", "", false},
		{"http-echo", "/self", "", false},
		{"exit:0", "sh", "0", false},
		{"exit:255", "sh", "255", false},
		{"exit:007", "sh", "007", false},
		{"exit:long:x", "true", "x", false}, // the longest prefix wins
		{"exit:256", "", "", true},
		{"exit:+1", "", "", true},
		{"exit:1.0", "", "", true},
		{"exit:1000", "", "", true},
		{"exit", "", "", true},
		{"Sleep", "", "", true},
		{"", "", "", true},
	}
	for _, tc := range tests {
		e, param, err := cat.resolve(tc.image)
		if tc.wantErr {
			var ue *runtime.UnknownImageError
			if !errors.As(err, &ue) || !errors.Is(err, runtime.ErrUnknownImage) || ue.Image != tc.image {
				t.Errorf("resolve(%q) = %v, want an UnknownImageError", tc.image, err)
			}
			continue
		}
		if err != nil || e.Program != tc.wantProg || param != tc.wantParam {
			t.Errorf("resolve(%q) = %q, %q, %v; want %q, %q", tc.image, e.Program, param, err, tc.wantProg, tc.wantParam)
		}
	}
	if diff := cmp.Diff([]string{"exit:N", "exit:long:*", "http-echo", "sleep"}, cat.Known()); diff != "" {
		t.Errorf("Known (-want +got):\n%s", diff)
	}
}

func TestCatalogArgs(t *testing.T) {
	t.Parallel()
	cat := DefaultCatalog("/self")
	echo := cat.Images["http-echo"]
	tests := []struct {
		name string
		spec runtime.Spec
		want []string
	}{
		{"loopback by default", runtime.Spec{Port: 8080}, []string{HTTPEchoArg, "127.0.0.1:8080"}},
		{"bind host", runtime.Spec{Port: 80, BindHost: "0.0.0.0"}, []string{HTTPEchoArg, "0.0.0.0:80"}},
		{"ipv6 bind host", runtime.Spec{Port: 80, BindHost: "::1"}, []string{HTTPEchoArg, "[::1]:80"}},
	}
	for _, tc := range tests {
		got, err := echo.Args("", tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: http-echo args (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := echo.Args("", runtime.Spec{}); !errors.Is(err, runtime.ErrInvalidSpec) {
		t.Errorf("http-echo without a port: %v, want ErrInvalidSpec", err)
	}
}

func TestRunChildRouting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantOK   bool
		wantCode int
	}{
		{"not a child", []string{"server", "--listen", ":1"}, false, 0},
		{"no args", nil, false, 0},
		{"missing address", []string{HTTPEchoArg}, true, 2},
		{"unusable address", []string{HTTPEchoArg, "not an address"}, true, 1},
	}
	for _, tc := range tests {
		code, ok := RunChild(tc.args)
		if ok != tc.wantOK || code != tc.wantCode {
			t.Errorf("%s: RunChild = %d, %v; want %d, %v", tc.name, code, ok, tc.wantCode, tc.wantOK)
		}
	}
}

// TestCatalogPatterns: the catalog the agent reports is what the manager
// matches submitted images against.
func TestCatalogPatterns(t *testing.T) {
	t.Parallel()
	got := strings.Join(DefaultCatalog("/bin/self").Patterns(), " ")
	if want := "exit:{0-255} http-echo sleep"; got != want {
		t.Errorf("patterns %q, want %q", got, want)
	}
}

// testCgroup makes a cgroup for the test under this process's own in the
// hierarchy of ctl ("" for v2), or skips where it cannot.
func testCgroup(t *testing.T, ctl string) (dir, home string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	mounts, own, err := readSelfCgroups()
	if err == nil {
		home, err = ownDir(mounts, own, ctl)
	}
	if err != nil {
		t.Skipf("no cgroup hierarchy for %q: %v", ctl, err)
	}
	dir = filepath.Join(home, fmt.Sprintf("sokovan-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-")))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Rmdir(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir, home
}

// TestKillDirSparesTheAgent: v1 lists the agent in a kernel's cgroup.procs
// while one of its threads is there, as the one that forks the kernel is
// for a moment; emptying that cgroup still kills only the kernel's.
func TestKillDirSparesTheAgent(t *testing.T) {
	dir, home := testCgroup(t, "pids")
	victim := exec.Command("sleep", "100")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer victim.Process.Kill()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(victim.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	goruntime.LockOSThread()
	if err := joinThread([]string{dir}); err != nil {
		t.Fatal(err)
	}
	(&cgroups{log: slog.New(slog.DiscardHandler)}).killDir(dir, 0)
	// Left locked on failure, the thread ends with the test.
	if err := joinThread([]string{home}); err != nil {
		t.Fatal(err)
	}
	goruntime.UnlockOSThread()
	// Reaching here means the agent lived; the victim must not have.
	if err := victim.Wait(); err == nil || victim.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the kernel's process ended with %v, want SIGKILL", err)
	}
}

// TestInsideV2: where a controller is in cgroup v2, the kernel's process
// is cloned straight into its cgroup, which New's probe finds possible.
func TestInsideV2(t *testing.T) {
	parent, _ := testCgroup(t, "")
	probeErr := probeCloneIntoCgroup(parent)
	leaf := filepath.Join(parent, "k")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	defer syscall.Rmdir(leaf)
	kc := &kernelCgroup{cg: &cgroups{log: slog.New(slog.DiscardHandler)}, dirs: []string{leaf}, v2: leaf}
	var out strings.Builder
	cmd := exec.Command("cat", "/proc/self/cgroup")
	cmd.Stdout = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	err := kc.inside(cmd.SysProcAttr, cmd.Start)
	if err == nil {
		err = cmd.Wait()
	}
	switch {
	case err != nil && probeErr != nil:
		t.Skipf("this machine cannot clone into a cgroup: %v", probeErr)
	case err != nil:
		t.Fatalf("the probe found cloning into a cgroup possible, but it fails: %v", err)
	case probeErr != nil:
		t.Fatalf("the probe says %v, but cloning into a cgroup works", probeErr)
	}
	var got string
	for _, line := range strings.Split(out.String(), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			got = p
		}
	}
	if !strings.HasSuffix(got, "/"+filepath.Base(parent)+"/k") {
		t.Errorf("the process started in v2 cgroup %q, want %s", got, leaf)
	}
}

// TestWatchdogKillsWhatItStillTracks: at EOF without "exit" the watchdog
// kills the process group a kernel's last track named, whether it was
// first tracked before it had one, and leaves forgotten kernels alone.
func TestWatchdogKillsWhatItStillTracks(t *testing.T) {
	t.Parallel()
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "100")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd
	}
	tracked, forgotten := start(), start()
	orders := fmt.Sprintf("track k1 0\ntrack k2 %d\ntrack k1 %d\nforget k2\n", forgotten.Process.Pid, tracked.Process.Pid)
	if code := runWatchdog(strings.NewReader(orders)); code != 0 {
		t.Fatalf("runWatchdog = %d", code)
	}
	if err := tracked.Wait(); err == nil || tracked.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the tracked kernel's group ended with %v, want SIGKILL", err)
	}
	// A SIGKILL the watchdog sent would already be the exit's cause: the
	// kernel marks the process exiting with it as kill(2) queues it.
	if err := forgotten.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := forgotten.Wait(); err == nil || forgotten.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("the forgotten kernel's group ended with %v, want this test's SIGTERM", err)
	}
}
