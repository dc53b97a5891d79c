package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// GateArg is the argv contract of the start gate every kernel begins as:
//
//	SELF GateArg
//
// with the order on fd 3 and fd 4 open for writing: the gate closes fd 4 by
// exec'ing the program, or writes why it could not before it exits, so the
// runtime learns which from the pipe. SELF is Config.GateExe, a binary that
// hands its arguments to RunChild first thing, as for HTTPEchoArg.
const GateArg = "__sokovan_gate"

// gateExit is the gate's exit code when it never ran the kernel's program:
// the runtime gave up on the kernel, the order was unreadable, or the agent
// died before the program could start.
const gateExit = 125

// maxOrder bounds what the gate reads from the runtime: far above any env
// the API accepts, far below what could hurt.
const maxOrder = 16 << 20

// gateOrder is what the runtime tells the gate once the gate is in the
// kernel's cgroup. The kernel's environment travels here rather than in the
// gate's own environment, so nothing a user sets is read by the gate (a Go
// runtime, and before it the dynamic loader) on its way to the program.
type gateOrder struct {
	// Path is the program, already resolved against the agent's PATH.
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	// UID and GID are the kernel's credentials; -1 keeps the gate's own.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Parent is the agent's pid. Changing credentials clears the parent-death
	// signal, so the gate sets it again and then checks it still has this
	// parent: an agent that died in between would otherwise leave the kernel
	// running unowned.
	Parent int `json:"parent"`
}

// runGate is the gate's whole life: read the order, drop privileges, exec.
// It returns only when the program could not be started.
func runGate() int {
	// Set on this thread, the parent-death signal must be set by the thread
	// that calls execve, since only that thread survives it.
	goruntime.LockOSThread()
	f, status := os.NewFile(3, "gate"), os.NewFile(4, "gate-status")
	if f == nil || status == nil {
		fmt.Fprintln(os.Stderr, "sokovan gate: no order or status pipe")
		return gateExit
	}
	// Closed by a successful exec: that EOF is the runtime's "started".
	unix.CloseOnExec(4)
	fail := func(code int, format string, args ...any) int {
		msg := fmt.Sprintf(format, args...)
		fmt.Fprintln(os.Stderr, "sokovan gate: "+msg)
		_, _ = status.WriteString(msg)
		return code
	}
	data, err := io.ReadAll(io.LimitReader(f, maxOrder))
	f.Close()
	if err != nil || len(data) == 0 {
		// An empty order is the runtime giving up on the kernel.
		return gateExit
	}
	var o gateOrder
	if err := json.Unmarshal(data, &o); err != nil || len(o.Argv) == 0 || o.Path == "" {
		return fail(gateExit, "unreadable order: %v", err)
	}
	// Opened while still privileged: a program the kernel's user may run but
	// not reach by path (a binary under a private directory, as the agent's
	// own is in tests) is still started through this descriptor.
	progFD, openErr := unix.Open(o.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if o.UID >= 0 {
		// syscall's versions apply to every thread of the process.
		if err := syscall.Setgroups(nil); err != nil {
			return fail(gateExit, "setgroups: %v", err)
		}
		if err := syscall.Setgid(o.GID); err != nil {
			return fail(gateExit, "setgid %d: %v", o.GID, err)
		}
		if err := syscall.Setuid(o.UID); err != nil {
			return fail(gateExit, "setuid %d: %v", o.UID, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fail(gateExit, "set the parent-death signal: %v", err)
	}
	if o.Parent != 0 && os.Getppid() != o.Parent {
		return fail(gateExit, "the agent is gone; not starting the program")
	}
	err = syscall.Exec(o.Path, o.Argv, o.Env)
	if errors.Is(err, syscall.EACCES) && openErr == nil {
		err = execveat(progFD, o.Argv, o.Env)
	}
	if errors.Is(err, syscall.ENOENT) {
		return fail(127, "exec %s: %v", o.Path, err)
	}
	return fail(126, "exec %s: %v", o.Path, err)
}

// execveat runs the program open at fd (AT_EMPTY_PATH), which checks only
// the file's own execute permission, not the directories above it.
func execveat(fd int, argv, env []string) error {
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	empty, err := unix.BytePtrFromString("")
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	return errno
}
