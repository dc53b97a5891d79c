package process

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Config configures a process runtime.
type Config struct {
	// DataDir holds a directory per kernel: output.log (stdout and stderr)
	// and work/, the kernel's working directory. Required.
	DataDir string
	// Catalog says which images exist and how to run them.
	Catalog Catalog
	// Sink receives events; nil discards them.
	Sink runtime.Sink
	// BaseEnv is the environment every kernel starts from, as KEY=VALUE.
	// Nil means PATH alone, copied from the agent, so the agent's own
	// secrets do not leak into kernels.
	BaseEnv []string
	// AllowCommand lets Spec.Command replace an image's command line. It is
	// off by default: with it, anyone who may create a session runs any
	// program as the kernel's user (see KernelUIDs).
	AllowCommand bool
	// WatchdogExe is the binary the runtime's watchdog runs (WatchdogArg).
	// It must call RunChild first thing in main. Empty means this
	// process's own executable.
	WatchdogExe string
	// KernelUIDs are the user ids kernels run as when the agent is root, one
	// per live kernel (its group id is the same number), so no kernel can
	// signal, trace or read the processes and files of another kernel or of
	// the agent. The zero value means DefaultKernelUIDs. An agent that is not
	// root runs kernels as its own user: it has no other to give.
	KernelUIDs UIDRange
	// RunAsAgentUser keeps kernels on the agent's own user even when that is
	// root. Only for trusted, single-user machines.
	RunAsAgentUser bool
	// Cgroups configures resource limits.
	Cgroups CgroupConfig
	// CloseGrace is the grace Close gives each kernel; zero means 5s.
	CloseGrace time.Duration
	// Now stamps states and events; nil means time.Now.
	Now func() time.Time
	// Log receives warnings about cleanup that failed; nil discards them.
	Log *slog.Logger
}

// CgroupConfig configures how kernels are confined.
type CgroupConfig struct {
	// Disable turns cgroups off: kernels run unconfined.
	Disable bool
	// Name is the directory, under the agent's own cgroup in each
	// hierarchy, that holds this runtime's kernel cgroups; empty means
	// "sokovan-" and a hash of the absolute DataDir. New kills and removes
	// whatever an earlier run left there, so it must differ between
	// runtimes that may run at once on one machine and stay the same
	// across restarts of one: the default does both.
	Name string
	// PidsMax caps each kernel's processes (threads included) when its
	// spec asks for no "pids" slot, so a fork bomb stays inside its kernel;
	// zero means DefaultPidsMax, a negative value no cap.
	PidsMax int64
}

// DefaultPidsMax is the pids cap of a kernel whose spec names none: ample
// for thread-heavy programs, far below what hurts a host.
const DefaultPidsMax = 4096

// UIDRange is Count user ids from First.
type UIDRange struct {
	First, Count int
}

// DefaultKernelUIDs lie far above the ranges distributions give people,
// services and container sub-ids, so they own nothing on the host.
var DefaultKernelUIDs = UIDRange{First: 2_000_000_000, Count: 65536}

// defaultCloseGrace is how long Close lets kernels stop politely.
const defaultCloseGrace = 5 * time.Second

// killWait bounds how long Close waits, once its context has ended, for
// kernels it has SIGKILLed to be reaped.
const killWait = 5 * time.Second

var _ runtime.Runtime = (*Runtime)(nil)

// Runtime runs kernels as OS processes. See the package doc.
type Runtime struct {
	cfg         Config
	now         func() time.Time
	log         *slog.Logger
	out         *runtime.Outbox
	cg          *cgroups // nil without cgroups
	enforcement []LimitStatus

	// waiters counts the goroutines that wait for kernel processes.
	waiters sync.WaitGroup

	// asUser: kernels get a uid of their own from KernelUIDs.
	asUser bool
	// dog kills what kernels leave behind if the agent dies unclosed.
	dog *watchdog

	kernels *runtime.Table[proc]
	images  *runtime.Images

	// mu guards what of a kernel is the process runtime's own (proc's
	// killed and reaping) and the uids.
	mu sync.Mutex
	// uids maps the uids of live kernels to them; a uid is free again once
	// its kernel has been reaped and its cgroup swept. uidNext is where
	// takeUID looks first, as an offset into KernelUIDs.
	uids    map[int]domain.KernelID
	uidNext int
}

// kernel is one kernel's entry in the runtime's table.
type kernel = runtime.Kernel[proc]

// proc is what the process runtime keeps of a kernel beside the table's
// part: its process. Start sets everything but killed and reaping before
// the kernel is listed, and nothing changes it after.
type proc struct {
	cmd *exec.Cmd
	pid int
	cg  *kernelCgroup
	// pidfd is readable once the process has exited; nil where the kernel
	// offers no pidfds.
	pidfd *os.File
	// uid is the kernel's user id, -1 for the agent's own.
	uid int

	// Guarded by Runtime.mu.
	// killed: Destroy escalated to SIGKILL.
	killed bool
	// reaping: the process has exited and is about to be reaped, after
	// which its pid and process group id may belong to someone else, so
	// nothing may signal them any more.
	reaping bool
}

// defaultCgroupName names the runtime's parent cgroup after its data dir.
// New removes what an earlier run left under that name, which must be this
// runtime's own earlier run (same data dir) and never another runtime's on
// the same machine: two dev modes, two agents, or tests running at once
// would otherwise kill each other's kernels on start.
func defaultCgroupName(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return "sokovan-" + hex.EncodeToString(sum[:6])
}

// New returns a process runtime. It creates DataDir and, when cgroups are
// usable, the runtime's parent cgroups.
func New(cfg Config) (*Runtime, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("process runtime: no data dir")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	if cfg.CloseGrace == 0 {
		cfg.CloseGrace = defaultCloseGrace
	}
	if cfg.Cgroups.Name == "" {
		cfg.Cgroups.Name = defaultCgroupName(cfg.DataDir)
	}
	if cfg.Cgroups.Name != filepath.Base(cfg.Cgroups.Name) || cfg.Cgroups.Name[0] == '.' {
		return nil, fmt.Errorf("process runtime: cgroup name %q must be one path element", cfg.Cgroups.Name)
	}
	switch {
	case cfg.Cgroups.PidsMax == 0:
		cfg.Cgroups.PidsMax = DefaultPidsMax
	case cfg.Cgroups.PidsMax < 0:
		cfg.Cgroups.PidsMax = 0
	}
	if cfg.WatchdogExe == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("process runtime: find the watchdog binary: %w", err)
		}
		cfg.WatchdogExe = self
	}
	if cfg.KernelUIDs == (UIDRange{}) {
		cfg.KernelUIDs = DefaultKernelUIDs
	}
	if u := cfg.KernelUIDs; u.First <= 0 || u.Count <= 0 || u.First > math.MaxUint32-1-u.Count {
		return nil, fmt.Errorf("process runtime: kernel uid range %d+%d is not a range of unprivileged ids", u.First, u.Count)
	}
	if cfg.BaseEnv == nil {
		path := os.Getenv("PATH")
		if path == "" {
			path = "/usr/local/bin:/usr/bin:/bin"
		}
		cfg.BaseEnv = []string{"PATH=" + path}
	}
	r := &Runtime{
		cfg:    cfg,
		out:    runtime.NewOutbox(cfg.Sink),
		uids:   make(map[int]domain.KernelID),
		asUser: os.Geteuid() == 0 && !cfg.RunAsAgentUser,
	}
	r.now, r.log = runtime.ClockAndLog(cfg.Now, cfg.Log)
	r.kernels = runtime.NewTable[proc](r.out, r.now)
	r.images = runtime.NewImages(r.out, r.now)
	dog, err := startWatchdog(cfg.WatchdogExe, cfg.BaseEnv)
	if err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	r.dog = dog
	if cfg.Cgroups.Disable {
		for _, c := range controllers {
			r.enforcement = append(r.enforcement, LimitStatus{Limit: c.limit, Detail: "cgroups disabled by configuration"})
		}
		return r, nil
	}
	cg := setupCgroups(r.log, cfg.Cgroups.Name)
	r.enforcement = cg.enforcement()
	if len(cg.byCtl) > 0 {
		r.cg = cg
	}
	return r, nil
}

// Enforcement reports, for mem, cpu and pids, whether kernels' requests are
// enforced as limits and where, or why not. Create works either way.
func (r *Runtime) Enforcement() []LimitStatus { return slices.Clone(r.enforcement) }

// Pull checks that the image is in the catalog and its program can be
// found.
func (r *Runtime) Pull(ctx context.Context, image string) error {
	return r.images.Pull(ctx, image, func(context.Context) (string, error) {
		return "", r.cfg.Catalog.check(image)
	})
}

// Catalog lists every image the runtime can run: names, and "prefix*"
// for the images named by a prefix and a parameter (exit:N).
func (r *Runtime) Catalog() []string { return r.cfg.Catalog.Patterns() }

// Images lists the pulled images.
func (r *Runtime) Images() []string { return r.images.List() }

// Create starts a kernel's process and returns once it runs its program.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	admit := func() error {
		if !r.images.Have(spec.Image) {
			return fmt.Errorf("kernel %s: %w: %q", spec.Kernel, runtime.ErrImageNotPulled, spec.Image)
		}
		return nil
	}
	return r.kernels.Create(ctx, spec, admit, func(ctx context.Context, k *kernel) error {
		return r.start(ctx, k, spec)
	})
}

// start runs the kernel's process. On success the process is running its
// program, the kernel is listed as started, and a waiter goroutine owns
// the process.
func (r *Runtime) start(ctx context.Context, k *kernel, spec runtime.Spec) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	argv, err := r.argv(spec)
	if err != nil {
		return err
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	if prog, err = filepath.Abs(prog); err != nil {
		return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	// Private to the agent's user: logs and work files may hold secrets.
	dir := filepath.Join(r.cfg.DataDir, string(spec.Kernel))
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	k.Own.uid = -1
	if r.asUser {
		if k.Own.uid, err = r.takeUID(spec.Kernel); err != nil {
			return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
		}
		defer func() {
			if err != nil {
				r.releaseUID(k.Own.uid)
			}
		}()
		// The kernel's own user owns its work dir; the directory above it
		// stays the agent's, so the log beside it is out of the kernel's
		// reach but for the descriptor it writes through.
		if err := chownTree(work, k.Own.uid); err != nil {
			return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
		}
	}
	logf, err := os.OpenFile(filepath.Join(dir, runtime.LogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	// The child holds its own copy of the descriptor once started.
	defer logf.Close()
	attr := procAttr(k.Own.uid)
	wd, closeWD, err := childWorkDir(work, k.Own.uid)
	if err != nil {
		return err
	}
	defer closeWD()
	env := r.environ(spec)
	newCmd := func(path string, out *os.File) *exec.Cmd {
		// The user's environment reaches the program's execve and nothing
		// before it: Go's child runs no code that reads it.
		return &exec.Cmd{Path: path, Args: argv, Env: env, Dir: wd, Stdout: out, Stderr: out, SysProcAttr: attr}
	}
	return r.launchKernel(k, spec, attr, func() (*exec.Cmd, error) {
		return launch(newCmd, prog, logf, k.Own.uid >= 0)
	})
}

// procAttr is how a kernel's process starts: as uid when uid >= 0, with a
// pidfd the start fills in.
func procAttr(uid int) *syscall.SysProcAttr {
	pidfd := -1
	attr := &syscall.SysProcAttr{
		// Its own process group, so Destroy reaches the children it forks;
		// Pdeathsig, so the kernel dies with the agent instead of
		// outliving it unowned. Go's child sets it after the credentials
		// below, which clear it, and then checks that its parent is still
		// the agent.
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
		PidFD:     &pidfd,
	}
	if uid >= 0 {
		// No supplementary groups: an empty list, not nil, clears the
		// agent's.
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
	}
	return attr
}

// childWorkDir is the directory the child changes to, and what to close
// once it has started.
func childWorkDir(work string, uid int) (string, func(), error) {
	if uid < 0 {
		return work, func() {}, nil
	}
	// Go's child changes directory after it has taken the kernel's
	// user, who may not pass through the agent's directories above
	// work. Through this descriptor it does not need to: the link
	// in /proc leads straight to work, and only its own permissions
	// count. Go's child leaves descriptors alone until after that.
	wfd, err := unix.Open(work, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", runtime.ErrCreateFailed, &os.PathError{Op: "open", Path: work, Err: err})
	}
	return "/proc/self/fd/" + strconv.Itoa(wfd), func() { unix.Close(wfd) }, nil
}

// launchKernel starts the kernel's program through start, inside the
// kernel's cgroup where there are cgroups, and hands the kernel to its
// waiter; on failure it leaves nothing behind.
func (r *Runtime) launchKernel(k *kernel, spec runtime.Spec, attr *syscall.SysProcAttr, start func() (*exec.Cmd, error)) error {
	var kc *kernelCgroup
	var dirs []string
	if r.cg != nil {
		var err error
		kc, err = r.cg.create(string(spec.Kernel), r.limits(spec))
		if err != nil {
			return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
		}
		dirs = kc.dirs
		// Before the program can run, so nothing it starts goes
		// unwatched: the process group is known only once it has.
		r.dog.track(spec.Kernel, 0, dirs)
	}
	var cmd *exec.Cmd
	run := func() (err error) {
		cmd, err = start()
		return err
	}
	// Taken before the start so that FinishedAt-StartedAt never
	// understates how long the program ran.
	startedAt := r.now()
	var err error
	if kc != nil {
		err = kc.inside(attr, run)
	} else {
		err = run()
	}
	var pf *os.File
	if cmd != nil {
		pf = pidFile(*attr.PidFD)
	}
	if err != nil {
		if cmd != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
		if pf != nil {
			pf.Close()
		}
		if kc != nil {
			kc.remove()
		}
		r.dog.forget(spec.Kernel)
		return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	pid := cmd.Process.Pid
	r.dog.track(spec.Kernel, pid, dirs)

	k.Own.cmd, k.Own.pid, k.Own.cg, k.Own.pidfd = cmd, pid, kc, pf
	k.Ports = spec.ServicePorts()
	r.kernels.Start(k, startedAt)
	r.waiters.Add(1)
	go r.wait(k)
	return nil
}

// pidFile wraps a started kernel's pidfd, nil when there is none.
func pidFile(pidfd int) *os.File {
	if pidfd < 0 {
		return nil
	}
	// Non-blocking, so os.File registers it with the runtime's poller:
	// waiting for an exit then holds no thread.
	if unix.SetNonblock(pidfd, true) == nil {
		return os.NewFile(uintptr(pidfd), "pidfd")
	}
	_ = unix.Close(pidfd)
	return nil
}

// takeUID gives kernel the next free uid of KernelUIDs. It goes round the
// range rather than reusing the lowest free one, so a uid comes back only
// after every other has been used: without cgroups a stray process of an
// ended kernel may outlive it, and must not find its uid in a new kernel.
func (r *Runtime) takeUID(kernel domain.KernelID) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.cfg.KernelUIDs
	for range u.Count {
		uid := u.First + r.uidNext
		r.uidNext = (r.uidNext + 1) % u.Count
		if _, used := r.uids[uid]; !used {
			r.uids[uid] = kernel
			return uid, nil
		}
	}
	return 0, fmt.Errorf("all %d kernel uids from %d are in use", u.Count, u.First)
}

func (r *Runtime) releaseUID(uid int) {
	if uid < 0 {
		return
	}
	r.mu.Lock()
	delete(r.uids, uid)
	r.mu.Unlock()
}

// chownTree gives dir and what is in it to uid (and the group of the same
// number): a work dir left by an earlier run of the same kernel id belongs
// to whichever uid that run had.
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
}

// argv is the kernel's command line: the spec's override or the image's.
func (r *Runtime) argv(spec runtime.Spec) ([]string, error) {
	if len(spec.Command) > 0 {
		if !r.cfg.AllowCommand {
			return nil, fmt.Errorf("%w: command override is not allowed on this agent", runtime.ErrInvalidSpec)
		}
		return slices.Clone(spec.Command), nil
	}
	e, param, err := r.cfg.Catalog.resolve(spec.Image)
	if err != nil {
		return nil, err
	}
	var args []string
	if e.Args != nil {
		if args, err = e.Args(param, spec); err != nil {
			return nil, err
		}
	}
	return append([]string{e.Program}, args...), nil
}

// environ is BaseEnv overlaid with the spec's environment and facts.
func (r *Runtime) environ(spec runtime.Spec) []string {
	env := make(map[string]string)
	for _, kv := range r.cfg.BaseEnv {
		k, v, _ := cutEnv(kv)
		env[k] = v
	}
	maps.Copy(env, runtime.KernelEnv(spec))
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

func cutEnv(kv string) (string, string, bool) {
	for i := 1; i < len(kv); i++ { // from 1: Windows-style "=C:" names are not ours
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// limits reads the spec's mem, cpu and pids requests.
func (r *Runtime) limits(spec runtime.Spec) limits {
	l := limits{
		memBytes: int64(spec.Slot("mem")),
		cpuMilli: int64(spec.Slot("cpu")),
		pids:     int64(spec.Slot("pids")) / 1000, // a count slot stores thousandths
	}
	if l.pids == 0 {
		l.pids = r.cfg.Cgroups.PidsMax
	}
	return l
}

// wait owns a kernel's process from start to reaping.
func (r *Runtime) wait(k *kernel) {
	defer r.waiters.Done()
	p := &k.Own
	err := awaitExit(p)
	r.mu.Lock()
	p.reaping = true
	r.mu.Unlock()
	oom := false
	// Only while the zombie pins the pid; a failed wait pins nothing.
	if err == nil {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL) // children left in the group
		if p.cg != nil {
			p.cg.killAll(p.pid)
			oom = p.cg.oomKilled()
		}
	}
	werr := p.cmd.Wait()
	if p.pidfd != nil {
		p.pidfd.Close()
	}
	if p.cg != nil {
		p.cg.remove()
	}
	// Only now is nothing of the kernel left that its uid could reach.
	r.releaseUID(p.uid)
	r.dog.forget(k.ID)

	code, sig := -1, syscall.Signal(0)
	if ps := p.cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal()
			code = 128 + int(sig)
		} else {
			code = ps.ExitCode()
		}
	}
	how := describeExit(code, sig)
	if p.cmd.ProcessState == nil {
		how = fmt.Sprintf("lost track of the process: %v", werr)
	}

	r.mu.Lock()
	killed := p.killed
	r.mu.Unlock()
	// Recorded, and reported, only now that the cgroup is gone: an exit
	// means the kernel's resources are free.
	r.kernels.Exited(k, func(destroying bool) runtime.Exit {
		switch {
		case destroying:
			msg := "destroyed: " + how
			if killed {
				msg += " after the grace period"
			}
			return runtime.Exit{Code: code, Reason: domain.ReasonDestroyed, Message: msg}
		case oom:
			return runtime.Exit{Code: code, Reason: domain.ReasonOOMKilled, Message: how + ": the memory limit was hit and the OOM killer ended a process of the kernel"}
		case sig != 0:
			return runtime.Exit{Code: code, Reason: domain.ReasonSignaled, Message: how}
		default:
			return runtime.Exit{Code: code, Reason: domain.ReasonExited, Message: how}
		}
	})
}

// awaitExit returns once the kernel's main process has exited, without
// reaping it: while the exited leader is a zombie its pid, and so its
// process group id, cannot be reused, so the group and cgroup can still be
// swept safely. With a pidfd the wait is parked on the runtime's poller,
// holding no OS thread, so thousands of kernels cost no thousands of
// threads; a blocking waitid, which holds one, is the fallback.
func awaitExit(p *proc) error {
	if p.pidfd != nil {
		if rc, err := p.pidfd.SyscallConn(); err == nil {
			_ = rc.Read(func(fd uintptr) bool {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				n, err := unix.Poll(fds, 0)
				return n > 0 || err != nil && !errors.Is(err, unix.EINTR)
			})
		}
	}
	// At once after the poll above; the wait itself where there was none.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func describeExit(code int, sig syscall.Signal) string {
	if sig != 0 {
		name := unix.SignalName(sig)
		if name == "" {
			name = fmt.Sprintf("signal %d", int(sig))
		}
		return "killed by signal " + name
	}
	return fmt.Sprintf("exited with code %d", code)
}

// Destroy stops a kernel: SIGTERM to its process group, SIGKILL once grace
// has passed (at once when grace is zero or ctx ends).
func (r *Runtime) Destroy(ctx context.Context, id domain.KernelID, grace time.Duration) error {
	return r.kernels.Destroy(ctx, r.kernels.Get(id), func(ctx context.Context, k *kernel) error {
		return r.stop(ctx, k, grace)
	})
}

// stop signals a started kernel and waits until it has been reaped.
func (r *Runtime) stop(ctx context.Context, k *kernel, grace time.Duration) error {
	if running, _ := r.kernels.Destroying(k); !running {
		return nil
	}
	if grace > 0 {
		r.signal(k, syscall.SIGTERM, false)
		if k.WaitExit(ctx, grace) {
			return nil
		}
	}
	r.signal(k, syscall.SIGKILL, true)
	select {
	case <-k.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signal sends sig to the kernel's process group unless the process is
// being reaped; kill records that Destroy escalated.
func (r *Runtime) signal(k *kernel, sig syscall.Signal, kill bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kill {
		k.Own.killed = true
	}
	if k.Own.reaping {
		return
	}
	_ = syscall.Kill(-k.Own.pid, sig)
}

// Live lists the kernels that have started and were not destroyed.
func (r *Runtime) Live() []runtime.KernelState { return r.kernels.Live() }

// PID returns the process id of a running kernel's main process.
func (r *Runtime) PID(id domain.KernelID) (int, bool) {
	k, st, ok := r.kernels.Lookup(id)
	if !ok || !st.Running {
		return 0, false
	}
	return k.Own.pid, true
}

// Logs opens the kernel's output log from its beginning. The log outlives
// the kernel: it stays readable after Destroy, until the data dir is
// cleaned by its owner.
func (r *Runtime) Logs(id domain.KernelID) (io.ReadCloser, error) {
	if err := runtime.ValidKernelID(id); err != nil {
		return nil, err
	}
	return runtime.OpenLog(filepath.Join(r.cfg.DataDir, string(id)), id)
}

// Close destroys every kernel with CloseGrace, waits for their processes to
// be reaped and their cgroups removed, and delivers the remaining events.
// When ctx ends first, the kernels still alive are SIGKILLed and Close waits
// a bounded time more for them, so it does not return with kernels running.
func (r *Runtime) Close(ctx context.Context) error {
	return runtime.Shutdown[proc]{Images: r.images, Kernels: r.kernels,
		// A Destroy that fails has had its ctx end; the wait for the
		// waiters in Stop is what bounds Close then.
		Destroy: func(ctx context.Context, id domain.KernelID, grace time.Duration) error {
			_ = r.Destroy(ctx, id, grace)
			return nil
		},
		Grace: r.cfg.CloseGrace,
		Stop: func() error {
			waited := make(chan struct{})
			go func() {
				r.waiters.Wait()
				close(waited)
			}()
			var err error
			select {
			case <-waited:
			case <-time.After(killWait):
				// The goroutine above ends when the stuck waiters do.
				err = errors.New("close: kernel processes did not stop after SIGKILL")
			}
			r.dog.stop()
			if r.cg != nil {
				r.cg.close()
			}
			return err
		},
		Out: r.out}.Run(ctx)
}
