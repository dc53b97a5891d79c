package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// needRoot skips a test of what only a root agent does; CI runs as root,
// so there it fails instead of passing unseen.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but not root: kernels' uid isolation cannot be tested")
	}
	t.Skip("needs root: only a root agent gives kernels users of their own")
}

// procUID reads the real uid of pid.
func procUID(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line for pid %d", pid)
	return 0
}

// TestKernelsCannotSignalEachOtherOrTheAgent: each kernel of a root agent
// runs as a uid of its own from KernelUIDs, so kill(2) from one kernel to
// another kernel or to the agent is refused.
func TestKernelsCannotSignalEachOtherOrTheAgent(t *testing.T) {
	t.Parallel()
	needRoot(t)
	uids := process.UIDRange{First: 2_100_000_000, Count: 100}
	h := newHarness(t, func(c *process.Config) {
		c.KernelUIDs = uids
		c.Catalog.Images["signal"] = process.Entry{Program: "sh", Args: func(string, runtime.Spec) ([]string, error) {
			return []string{"-c", `kill -TERM "$VICTIM" 2>/dev/null; echo "victim=$?"
kill -TERM "$AGENT" 2>/dev/null; echo "agent=$?"
echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"`}, nil
		}}
	})
	victim := h.spec("sleep")
	h.Start(victim)
	vpid, ok := h.rt.PID(victim.Kernel)
	if !ok {
		t.Fatal("the victim kernel is not running")
	}
	vuid := procUID(t, vpid)
	if vuid < uids.First || vuid >= uids.First+uids.Count {
		t.Errorf("victim runs as uid %d, want one in [%d, %d)", vuid, uids.First, uids.First+uids.Count)
	}

	attacker := h.spec("signal")
	attacker.Env["VICTIM"] = strconv.Itoa(vpid)
	attacker.Env["AGENT"] = strconv.Itoa(os.Getpid())
	h.Start(attacker)
	if ev := h.rec.Exit(t, attacker.Kernel); runtimetest.Code(ev) != 0 {
		t.Fatalf("attacker exited %+v; logs:\n%s", ev, h.Logs(attacker.Kernel))
	}
	out := h.Logs(attacker.Kernel)
	if !strings.Contains(out, "victim=1") || !strings.Contains(out, "agent=1") {
		t.Errorf("a kernel could signal another kernel or the agent; its output:\n%s", out)
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "uid="); ok {
			if n, _ := strconv.Atoi(v); n == vuid || n == 0 || n < uids.First || n >= uids.First+uids.Count {
				t.Errorf("attacker ran as uid %d (victim %d, range from %d)", n, vuid, uids.First)
			}
		}
		if v, ok := strings.CutPrefix(f, "groups="); ok && v == "0" {
			t.Errorf("attacker kept the agent's group 0: %s", out)
		}
	}
	if _, ok := h.Live(victim.Kernel); !ok || procUID(t, vpid) != vuid {
		t.Errorf("the victim did not survive the attempt")
	}
}

// TestReservedEnvIsRefused: a spec that sets a variable the loader, a
// shell or the runtime reads is refused before anything starts, whatever
// the manager let through.
func TestReservedEnvIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.Pull("sleep")
	for _, name := range []string{"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "BASH_ENV", "ENV", "IFS", runtime.EnvKernelID} {
		s := h.spec("sleep")
		s.Env[name] = "/tmp/evil"
		err := h.rt.Create(context.Background(), s)
		if !errors.Is(err, runtime.ErrInvalidSpec) {
			t.Errorf("env %s: Create = %v, want ErrInvalidSpec", name, err)
		}
		if _, ok := h.Live(s.Kernel); ok {
			t.Errorf("env %s: the kernel runs", name)
		}
	}
}

// TestKernelWorkDirBelongsToItsUser: the kernel can write its work dir,
// and cannot reach the agent's data above it but through its own output.
func TestKernelWorkDirBelongsToItsUser(t *testing.T) {
	t.Parallel()
	needRoot(t)
	dataDir := t.TempDir()
	h := newHarness(t, func(c *process.Config) {
		c.DataDir = dataDir
		c.Catalog.Images["writer"] = process.Entry{Program: "sh", Args: func(string, runtime.Spec) ([]string, error) {
			return []string{"-c", `echo hi > mine && echo wrote; cat ../output.log >/dev/null 2>&1; echo "read-log=$?"`}, nil
		}}
	})
	s := h.spec("writer")
	h.Start(s)
	if ev := h.rec.Exit(t, s.Kernel); runtimetest.Code(ev) != 0 {
		t.Fatalf("writer exited %+v; logs:\n%s", ev, h.Logs(s.Kernel))
	}
	out := h.Logs(s.Kernel)
	if !strings.Contains(out, "wrote") || !strings.Contains(out, "read-log=1") {
		t.Errorf("want the work dir writable and the log unreadable by path; output:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, string(s.Kernel), "work", "mine")); err != nil || string(b) != "hi\n" {
		t.Errorf("work file: %q, %v", b, err)
	}
}

// TestThousandsOfKernelsHoldNoThreads: waiting for a kernel's exit holds
// no OS thread, so 2,000 running kernels fit under a cap of 200 threads
// (Go aborts the whole process past its cap) and all still report their
// exits. Not parallel: the cap is the process's.
func TestThousandsOfKernelsHoldNoThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2,000 processes")
	}
	const n = 2000
	prev := debug.SetMaxThreads(200)
	defer debug.SetMaxThreads(prev)
	before := threads(t)

	h := newHarness(t, func(c *process.Config) {
		// One cgroup per kernel is not what this measures, and 2,000 of
		// them triple the test's time.
		c.Cgroups.Disable = true
		c.CloseGrace = time.Second
	})
	h.Pull("sleep")
	specs := make([]runtime.Spec, n)
	for i := range specs {
		specs[i] = h.spec("sleep")
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := h.rt.Create(context.Background(), specs[i]); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range specs {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Create: %v", err)
	}
	if got := len(h.rt.Live()); got != n {
		t.Fatalf("%d kernels live, want %d", got, n)
	}
	if after := threads(t); after-before > 50 {
		t.Errorf("%d threads with %d kernels running (%d before): waiting holds threads", after, n, before)
	}
	// Every kernel's exit is still seen: end them from outside the runtime.
	var ids []domain.KernelID
	for _, s := range specs {
		pid, ok := h.rt.PID(s.Kernel)
		if !ok {
			t.Fatalf("kernel %s has no pid", s.Kernel)
		}
		if err := unixKill(pid); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.Kernel)
	}
	for _, id := range ids {
		if ev := h.rec.Exit(t, id); runtimetest.Code(ev) != 128+9 {
			t.Fatalf("kernel %s: exit %+v, want killed by SIGKILL", id, ev)
		}
	}
}

// threads counts this process's OS threads.
func threads(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

func unixKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// TestKernelStartsAsItsOwn: a root agent's kernel starts its program with
// the kernel's uid and gid and no other group, in its work directory, with
// the parent-death signal set (taking the uid clears it), and holding no
// descriptor of the agent's beyond stdio; both when the kernel's user can
// reach the program by path and when only the agent can, as with a binary
// under a private directory.
func TestKernelStartsAsItsOwn(t *testing.T) {
	t.Parallel()
	needRoot(t)
	// Other users may not pass through it.
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	inherited := map[int]bool{}
	for fd := 3; fd < 1024; fd++ {
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			inherited[fd] = true
		}
	}
	for _, tc := range []struct{ name, dir string }{
		{"reachable program", sharedDir(t)},
		{"private program", private},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prog := filepath.Join(tc.dir, "child")
			copyFile(t, selfExe(t), prog, 0o755)
			uids := process.UIDRange{First: 2_100_100_000, Count: 100}
			dataDir := t.TempDir()
			h := newHarness(t, func(c *process.Config) {
				c.DataDir = dataDir
				c.KernelUIDs = uids
				// Go's runtime keeps its cgroup's CPU limit files open to
				// follow the limit: descriptors of the program's own.
				c.BaseEnv = append(c.BaseEnv, "GODEBUG=containermaxprocs=0,updatemaxprocs=0")
				c.Catalog.Images["startup"] = process.Entry{Program: prog, Args: func(string, runtime.Spec) ([]string, error) {
					return []string{startupArg}, nil
				}}
			})
			s := h.spec("startup")
			h.Start(s)
			if ev := h.rec.Exit(t, s.Kernel); runtimetest.Code(ev) != 0 {
				t.Fatalf("startup exited %+v; logs:\n%s", ev, h.Logs(s.Kernel))
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(h.Logs(s.Kernel)), "\n") {
				k, v, _ := strings.Cut(line, "=")
				got[k] = v
			}
			ids := strings.Split(got["uid"], ",")
			uid, _ := strconv.Atoi(ids[0])
			if uid < uids.First || uid >= uids.First+uids.Count || strings.Count(got["uid"], ids[0]) != 4 {
				t.Errorf("uid (real, effective, saved, fs) = %s, want one uid of [%d, %d)", got["uid"], uids.First, uids.First+uids.Count)
			}
			// Whatever started the test left these open for every exec;
			// the runtime adds none.
			var fds []string
			for _, fd := range strings.Split(got["fds"], ",") {
				if n, err := strconv.Atoi(fd); err == nil && !inherited[n] {
					fds = append(fds, fd)
				}
			}
			got["fds"] = strings.Join(fds, ",")
			want := map[string]string{
				"fds":       "",
				"pdeathsig": strconv.Itoa(int(syscall.SIGKILL)),
				"cwd":       filepath.Join(dataDir, string(s.Kernel), "work"),
				"gid":       got["uid"],
				"groups":    "",
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}
