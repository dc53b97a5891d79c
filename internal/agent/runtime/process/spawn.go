package process

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// inside runs start, which forks the kernel's process, so that the process
// is born in every cgroup of kc: not one instruction of it, the runtime's
// or the program's, runs outside the kernel's limits.
//
// cgroup v2 clones it straight into its cgroup (CLONE_INTO_CGROUP, which
// setupController made sure the machine has). cgroup v1 has nothing like
// it, but a child is born in the cgroups of the thread that forks it, and
// v1 lets one thread of a process change cgroups alone: so for v1, start
// runs on an OS thread that joins the kernel's cgroups first and leaves
// them once the child runs its program (see forkInside).
func (kc *kernelCgroup) inside(attr *syscall.SysProcAttr, start func() error) error {
	if kc.v2 != "" {
		fd, err := unix.Open(kc.v2, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open cgroup: %w", &os.PathError{Op: "open", Path: kc.v2, Err: err})
		}
		defer unix.Close(fd)
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	}
	if len(kc.v1) == 0 {
		return start()
	}
	res := make(chan error, 1)
	go kc.forkInside(start, res)
	return <-res
}

// forkInside is inside's goroutine for cgroup v1. It is locked to its OS
// thread from before the thread joins the kernel's cgroups until the
// thread is back in its own, so no other goroutine runs there meanwhile;
// threads the Go runtime starts meanwhile are cloned from its template
// thread, not from a locked one. The thread then goes back to the
// runtime's pool rather than ending with the goroutine: Linux sends a
// child's parent-death signal when the thread that forked it exits, and
// the thread must outlive the kernel.
func (kc *kernelCgroup) forkInside(start func() error, res chan<- error) {
	goruntime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread owns the agent's memory (its mm's owner): while
		// it sat in a kernel's v1 memory cgroup, every page the agent
		// faulted in would be charged to the kernel, whose OOM killer
		// could then pick the agent. A goroutine started while this one
		// holds the main thread runs on another.
		inner := make(chan error, 1)
		go kc.forkInside(start, inner)
		err := <-inner
		goruntime.UnlockOSThread()
		res <- err
		return
	}
	home, err := kc.threadHome()
	if err != nil {
		goruntime.UnlockOSThread()
		res <- err
		return
	}
	err = joinThread(kc.v1)
	if err == nil {
		err = start()
	}
	if err == nil {
		err = kc.settle()
	}
	back := joinThread(home)
	if back == nil {
		goruntime.UnlockOSThread()
		res <- err
		return
	}
	res <- errors.Join(err, fmt.Errorf("leave the kernel's cgroup: %w", back))
	kc.cg.log.Error("a thread of the agent is stuck in a kernel's cgroup; retrying", "cgroups", kc.v1, "err", back)
	// Ending the thread would kill what it forked, and it may not run other
	// goroutines from inside a kernel's cgroup: it sleeps, still locked,
	// until it is home.
	for wait := 10 * time.Millisecond; joinThread(home) != nil; wait = min(2*wait, time.Minute) {
		time.Sleep(wait)
	}
	goruntime.UnlockOSThread()
}

// threadHome is where the calling thread is in each of kc's v1
// hierarchies, to put it back there.
func (kc *kernelCgroup) threadHome() ([]string, error) {
	data, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read the thread's cgroups: %w", err)
	}
	own, err := parseProcCgroup(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read the thread's cgroups: %w", err)
	}
	home := make([]string, len(kc.v1Ctl))
	for i, ctl := range kc.v1Ctl {
		if home[i], err = ownDir(kc.cg.mounts, own, ctl); err != nil {
			return nil, err
		}
	}
	return home, nil
}

// joinThread moves the calling thread, and it alone, into each v1 cgroup
// dir. "0" names the caller, which spares the kernel the lock that
// moving another task takes.
func joinThread(dirs []string) error {
	for _, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte("0"), 0); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	return nil
}

// probeCloneIntoCgroup checks that a process can be cloned into a v2
// cgroup under parent (CLONE_INTO_CGROUP, Linux 5.7), the only way a
// kernel's process is born in its v2 cgroup. The probe execs a path that
// cannot exist in a cgroup file system: ENOENT means the clone worked and
// nothing ran.
func probeCloneIntoCgroup(parent string) error {
	// Kernel ids never start with '.', and New sweeps it up if it stays.
	dir := filepath.Join(parent, ".probe")
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	defer syscall.Rmdir(dir)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	missing := filepath.Join(dir, "none")
	cmd := &exec.Cmd{Path: missing, Args: []string{missing}, Env: []string{},
		SysProcAttr: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}}
	err = cmd.Start()
	if err == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if err == nil || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("cannot start a process inside a cgroup (CLONE_INTO_CGROUP needs Linux 5.7): %w", err)
}

// launch starts the kernel's program prog with out as its stdout and
// stderr. A kernel that runs as a user of its own may be refused a program
// the agent reaches, one under a private directory as a test binary is;
// then launch starts it again through a descriptor opened here, where only
// the file's own execute bit is checked, as execveat(2) would.
func launch(newCmd func(path string, out *os.File) *exec.Cmd, prog string, out *os.File, otherUser bool) (*exec.Cmd, error) {
	cmd := newCmd(prog, out)
	err := cmd.Start()
	if err == nil {
		return cmd, nil
	}
	if !otherUser || !errors.Is(err, syscall.EACCES) {
		return nil, err
	}
	pfd, openErr := unix.Open(prog, unix.O_PATH|unix.O_CLOEXEC, 0)
	if openErr != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(pfd) }()
	// Go's child copies Stdin, Stdout and Stderr onto 0-2 and uses only
	// numbers above the highest of them as scratch, leaving the agent's
	// other descriptors as they are until the exec, which opens the
	// program and only then closes them (syscall/exec_linux.go). Between
	// 3 and the child's stdout, prog's descriptor survives to be exec'd,
	// and close-on-exec, it is not the program's to keep.
	if pfd < 3 {
		moved, err := unix.FcntlInt(uintptr(pfd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, fmt.Errorf("exec %s: %w", prog, err)
		}
		_ = unix.Close(pfd)
		pfd = moved
	}
	ofd, dupErr := unix.FcntlInt(out.Fd(), unix.F_DUPFD_CLOEXEC, pfd+1)
	if dupErr != nil {
		return nil, fmt.Errorf("exec %s: %w", prog, dupErr)
	}
	above := os.NewFile(uintptr(ofd), out.Name())
	defer above.Close()
	cmd = newCmd("/proc/self/fd/"+strconv.Itoa(pfd), above)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("exec %s: %w", prog, err)
	}
	return cmd, nil
}
