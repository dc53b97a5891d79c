package process

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// WatchdogArg is the argv contract of the runtime's watchdog:
//
//	SELF WatchdogArg
//
// with the runtime's orders on stdin. SELF is Config.WatchdogExe.
const WatchdogArg = "__sokovan_watchdog"

// watchdog is a process of its own that outlives the agent for one reason:
// to kill what the agent's kernels left behind when the agent dies without
// a Close. Pdeathsig reaches a kernel's main process only; its children and
// their children would run on unowned. The runtime tells the watchdog each
// kernel's cgroup directories before its process starts and its process
// group once it has, and has it forget the kernel once reaped; when its
// stdin reaches EOF without a clean "exit", the agent is gone, and the
// watchdog kills every group and every process in every cgroup it still
// knows, then exits.
//
// Orders, one per line, KERNEL a kernel id:
//
//	track KERNEL PGID [CGROUP-DIR ...]   (PGID 0: not started yet)
//	forget KERNEL
//	exit
type watchdog struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	dead bool
}

// startWatchdog runs exe as the watchdog. It is its own process group and
// has no parent-death signal, so the agent's death (and any kill of a
// kernel's group) leaves it standing. env is the operator's, BaseEnv.
func startWatchdog(exe string, env []string) (*watchdog, error) {
	cmd := exec.Command(exe, WatchdogArg)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the kernel watchdog: %w", err)
	}
	return &watchdog{cmd: cmd, in: in}, nil
}

func (w *watchdog) send(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return
	}
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		// A dead watchdog protects nothing more, but the kernels still run.
		w.dead = true
	}
}

// track replaces what the watchdog knows of kernel: its process group
// (0 before it has one) and cgroup directories.
func (w *watchdog) track(kernel domain.KernelID, pgid int, cgroupDirs []string) {
	w.send(strings.Join(append([]string{"track", string(kernel), strconv.Itoa(pgid)}, cgroupDirs...), " "))
}

func (w *watchdog) forget(kernel domain.KernelID) { w.send("forget " + string(kernel)) }

// stop ends the watchdog without it killing anything: Close has ended the
// kernels itself.
func (w *watchdog) stop() {
	w.send("exit")
	w.mu.Lock()
	w.dead = true
	w.in.Close()
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(killWait):
		_ = w.cmd.Process.Kill()
		<-done
	}
}

// runWatchdog is the watchdog process's whole life.
func runWatchdog(in io.Reader) int {
	type kernel struct {
		pgid int
		dirs []string
	}
	tracked := map[string]kernel{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "exit":
			return 0
		case "track":
			if len(f) < 3 {
				continue
			}
			pgid, err := strconv.Atoi(f[2])
			if err != nil || pgid < 0 {
				continue
			}
			tracked[f[1]] = kernel{pgid: pgid, dirs: f[3:]}
		case "forget":
			if len(f) == 2 {
				delete(tracked, f[1])
			}
		}
	}
	// EOF without "exit": the agent died. A group id is not given to a new
	// process while any member of the group lives, so this reaches only
	// what the kernels left.
	for _, k := range tracked {
		if k.pgid > 1 {
			_ = syscall.Kill(-k.pgid, syscall.SIGKILL)
		}
		for _, dir := range k.dirs {
			killCgroup(dir)
		}
	}
	return 0
}

// killCgroup SIGKILLs every process in a kernel's cgroup, which catches
// those that left the kernel's process group, until none is left or a
// bound passes.
func killCgroup(dir string) {
	deadline := time.Now().Add(cleanupWait)
	for time.Now().Before(deadline) {
		pids, err := readPids(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(pids) == 0 {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(cleanupPoll)
	}
}
