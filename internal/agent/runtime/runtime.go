package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Runtime runs kernels on one agent. All methods are safe for concurrent use.
//
// Kernels a runtime has started stay listed by Live, running or exited, until
// Destroy removes them; a kernel that exits on its own keeps its exit code
// there so the agent can report it again after a lost event.
type Runtime interface {
	// Pull makes an image available to Create. Pulling an image that is
	// already available returns nil at once. An image the runtime cannot run
	// fails with an error matching ErrUnknownImage whose message says why.
	Pull(ctx context.Context, image string) error

	// Create starts one kernel and returns once it has started. Creating an
	// id that already exists (running or exited) does nothing and returns
	// nil, so a retried create_kernels call never starts a second kernel.
	Create(ctx context.Context, spec Spec) error

	// Destroy stops a kernel: a polite stop (SIGTERM for processes), then a
	// forced one once grace has passed. It returns only once the kernel has
	// stopped; a kernel that is unknown or already exited counts as stopped.
	// The kernel is then gone from Live. A cancelled ctx makes Destroy force
	// the stop at once and return the context's error if the kernel has not
	// stopped yet.
	Destroy(ctx context.Context, id domain.KernelID, grace time.Duration) error

	// Live lists the kernels that exist, sorted by id: running ones and
	// exited ones not yet destroyed. Kernels still being created are left
	// out.
	Live() []KernelState

	// Images lists the images Pull has made available, sorted.
	Images() []string

	// Logs returns the kernel's combined stdout and stderr as written so far.
	// An unknown kernel fails with ErrNotFound.
	Logs(id domain.KernelID) (io.ReadCloser, error)

	// Close destroys every kernel, delivers the events still queued and
	// stops the runtime's goroutines. Later calls to Pull and Create fail
	// with ErrClosed.
	Close(ctx context.Context) error
}

// Errors callers test with errors.Is.
var (
	// ErrUnknownImage: the image is not one this runtime can run.
	ErrUnknownImage = errors.New("unknown image")
	// ErrImageNotPulled: Create was asked for an image Pull has not made
	// available.
	ErrImageNotPulled = errors.New("image not pulled")
	// ErrPullFailed: the image is known but making it available failed.
	ErrPullFailed = errors.New("image pull failed")
	// ErrCreateFailed: the kernel could not be started.
	ErrCreateFailed = errors.New("kernel create failed")
	// ErrInvalidSpec: the spec cannot describe a kernel.
	ErrInvalidSpec = errors.New("invalid kernel spec")
	// ErrNotFound: no such kernel.
	ErrNotFound = errors.New("kernel not found")
	// ErrClosed: the runtime has been closed.
	ErrClosed = errors.New("runtime closed")
)

// UnknownImageError says which image was refused and what would have been
// accepted. It matches ErrUnknownImage.
type UnknownImageError struct {
	Image string
	// Known lists the images the runtime accepts, in the form a user would
	// write them ("exit:N"); it may be empty when any name would be
	// accepted and Detail says why this one was not.
	Known []string
	// Detail, when set, says what was wrong with an image that matched a
	// known form, such as an exit code out of range.
	Detail string
}

func (e *UnknownImageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "image %q is not in the catalog", e.Image)
	if len(e.Known) > 0 {
		fmt.Fprintf(&b, " (known: %s)", strings.Join(e.Known, ", "))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnknownImage) true.
func (e *UnknownImageError) Is(target error) bool { return target == ErrUnknownImage }

// KernelState is one kernel as the runtime sees it, for heartbeats and for
// telling the manager what exists.
type KernelState struct {
	ID      domain.KernelID
	Session domain.SessionID
	Image   string
	Running bool
	// ExitCode is set once the kernel has exited. A kernel ended by a signal
	// reports 128 plus the signal number, as shells do.
	ExitCode *int
	// Reason and Message are set once the kernel has exited. Message is for
	// people: "exited with code 3", "killed by signal SIGSEGV".
	Reason     domain.ExitReason
	Message    string
	StartedAt  time.Time
	FinishedAt time.Time
	// Ports are what the kernel serves, as its kernel_started event said.
	Ports []domain.ServicePort
}

// CapacityReporter is a runtime that can say what it offers now, when its
// capacity is not fixed at start (a SLURM partition whose nodes come and
// go). The agent asks it before each heartbeat.
type CapacityReporter interface {
	Capacity(ctx context.Context) (map[string]string, error)
}

// WaitReporter is a runtime whose kernels may wait, created but not
// started, on something outside the agent (a SLURM queue); the agent tells
// the manager why.
type WaitReporter interface {
	Waiting() []Waiting
}

// Waiting is one kernel waiting to start, and why, for people.
type Waiting struct {
	ID   domain.KernelID
	Note string
}

// Sink receives a runtime's events: what it reports on its own, without
// being asked. Runtimes emit domain.EventImagePull{Started,Finished,Failed}
// with Image set, domain.EventKernelStarted and domain.EventKernelTerminated
// with Kernel and Session set; a terminated kernel always carries its
// ExitCode and Reason, and Message explains failures and exits. Agent and
// Epoch are the agent's to fill in.
//
// Runtimes call it through an Outbox: from one goroutine at a time, in
// order, never while holding their own locks. A sink must return; it must
// not call the runtime's Close.
type Sink func(domain.KernelEvent)

// Spec is everything a runtime needs to start one kernel: the manager's
// domain.KernelSpec as the wire brought it, and what the agent adds. Of
// the manager's: Command, when not empty, replaces the image's own command
// line; Env is added to the kernel's environment, the SOKOVAN_* facts
// below winning over an entry of the same name; ClusterRole empty means
// main and ClusterSize zero a single kernel; Devices are nil where the
// agent hands out no devices, and empty (not nil) where it does and the
// kernel got none, so it is shown none. Serves is the agent's to act on
// (it picks Port); runtimes read Port.
type Spec struct {
	domain.KernelSpec
	// Slots is the kernel's requested resources, read through Registry for
	// slot names and kinds. The process runtime turns "mem", "cpu" and
	// "pids" into limits where it can enforce them.
	Slots    domain.Vec
	Registry *domain.Registry
	// Hostname is this kernel's own of ClusterHosts.
	Hostname string
	// ClusterAddrs are where each of ClusterHosts is reached (its
	// agent's host), same order; empty when the manager did not say.
	ClusterAddrs []string
	// TimeLimit is the session's time limit (0: none). The manager ends
	// the session at it; runtimes that submit to a scheduler of their own
	// pass it on (SLURM's --time) so the job is bounded there too.
	TimeLimit time.Duration
	// Port is where a serving image listens; zero when it serves nothing.
	// BindHost is the address it binds, 127.0.0.1 when empty, so a kernel
	// is not reachable from other hosts unless the agent asks for it.
	Port     int
	BindHost string
}

// Environment variables every kernel gets.
const (
	EnvSessionID    = "SOKOVAN_SESSION_ID"
	EnvKernelID     = "SOKOVAN_KERNEL_ID"
	EnvImage        = "SOKOVAN_IMAGE"
	EnvClusterRole  = "SOKOVAN_CLUSTER_ROLE"
	EnvClusterIdx   = "SOKOVAN_CLUSTER_IDX"
	EnvClusterSize  = "SOKOVAN_CLUSTER_SIZE"
	EnvClusterHosts = "SOKOVAN_CLUSTER_HOSTS" // comma-separated, index order
	EnvClusterHost  = "SOKOVAN_CLUSTER_HOST"  // only when Spec.Hostname is set
	// EnvClusterAddrs pairs with EnvClusterHosts: the address each kernel
	// is reached at (its agent's host), comma-separated in the same order;
	// only when Spec.ClusterAddrs is set.
	EnvClusterAddrs = "SOKOVAN_CLUSTER_ADDRS"
	EnvPort         = "SOKOVAN_PORT" // only when Spec.Port is set
	// EnvBindHost is the address a kernel given a port binds (Spec.BindHost,
	// 127.0.0.1 when that is empty); set with EnvPort. A kernel that binds
	// elsewhere may be reachable where the agent did not mean it to be, or
	// not where its reported service port says.
	EnvBindHost = "SOKOVAN_BIND_HOST"
)

// DefaultBindHost is where a kernel given a port listens when the spec
// names no BindHost: the agent's loopback.
const DefaultBindHost = "127.0.0.1"

// ServicePorts is what a kernel given a port serves there, for its
// kernel_started event: it listens on ServiceHost():Port (told so by
// SOKOVAN_BIND_HOST and SOKOVAN_PORT, or by its command line), and what the
// manager proxies and health-checks is HTTP. Nil without a port. A runtime
// reports it only where the kernel is reachable at that address from the
// agent's host.
func (s Spec) ServicePorts() []domain.ServicePort {
	if s.Port == 0 {
		return nil
	}
	return []domain.ServicePort{{Name: "http", Protocol: "http", Host: s.ServiceHost(), Port: s.Port}}
}

// ServiceHost is the address a kernel given spec's port binds.
func (s Spec) ServiceHost() string {
	if s.BindHost == "" {
		return DefaultBindHost
	}
	return s.BindHost
}

// maxIDLen bounds kernel ids, which become file and cgroup names.
const maxIDLen = 128

// Validate reports what makes the spec unusable, wrapping ErrInvalidSpec.
// Kernel ids become directory and cgroup names, so they are restricted to
// letters, digits, '.', '_' and '-' and may not start with '.'.
func (s Spec) Validate() error {
	if err := ValidKernelID(s.Kernel); err != nil {
		return err
	}
	if s.Image == "" {
		return fmt.Errorf("%w: kernel %s: empty image", ErrInvalidSpec, s.Kernel)
	}
	if s.ClusterSize < 0 || s.ClusterIdx < 0 || s.ClusterSize > 0 && s.ClusterIdx >= s.ClusterSize {
		return fmt.Errorf("%w: kernel %s: cluster index %d outside size %d", ErrInvalidSpec, s.Kernel, s.ClusterIdx, s.ClusterSize)
	}
	if s.Port < 0 || s.Port > 65535 {
		return fmt.Errorf("%w: kernel %s: port %d outside 0-65535", ErrInvalidSpec, s.Kernel, s.Port)
	}
	if len(s.Slots) > 0 && s.Registry == nil {
		return fmt.Errorf("%w: kernel %s: slots without a registry", ErrInvalidSpec, s.Kernel)
	}
	for k, v := range s.Env {
		// The manager refuses these at submit; an agent checks again since
		// it is the one whose host they would reach. Names the manager
		// sets itself (an array element's) pass.
		if err := domain.CheckKernelEnvName(k); err != nil {
			return fmt.Errorf("%w: kernel %s: environment: %v", ErrInvalidSpec, s.Kernel, err)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: kernel %s: environment %s holds a NUL byte", ErrInvalidSpec, s.Kernel, k)
		}
	}
	for _, a := range s.Command {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("%w: kernel %s: command argument holds a NUL byte", ErrInvalidSpec, s.Kernel)
		}
	}
	return nil
}

// ValidKernelID reports, wrapping ErrInvalidSpec, why id cannot name a
// kernel's directory or cgroup.
func ValidKernelID(id domain.KernelID) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("%w: kernel id %q must be 1 to %d characters", ErrInvalidSpec, id, maxIDLen)
	}
	if id[0] == '.' {
		return fmt.Errorf("%w: kernel id %q may not start with '.'", ErrInvalidSpec, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w: kernel id %q may hold only letters, digits, '.', '_' and '-'", ErrInvalidSpec, id)
		}
	}
	return nil
}

// Slot returns the requested quantity of the named slot, zero when the
// registry does not know the slot or nothing was requested.
func (s Spec) Slot(name string) domain.Quantity {
	if s.Registry == nil {
		return 0
	}
	id, ok := s.Registry.Lookup(name)
	if !ok {
		return 0
	}
	return s.Slots.At(id)
}

// KernelEnv returns the environment facts and Spec.Env as a map: the
// spec's entries first, then the SOKOVAN_* facts, which win on a clash so a
// kernel can trust them.
func KernelEnv(s Spec) map[string]string {
	env := make(map[string]string, len(s.Env)+9)
	for k, v := range s.Env {
		env[k] = v
	}
	role := s.ClusterRole
	if role == "" {
		role = domain.RoleMain
	}
	size := s.ClusterSize
	if size == 0 {
		size = 1
	}
	env[EnvSessionID] = string(s.Session)
	env[EnvKernelID] = string(s.Kernel)
	env[EnvImage] = s.Image
	env[EnvClusterRole] = role
	env[EnvClusterIdx] = fmt.Sprint(s.ClusterIdx)
	env[EnvClusterSize] = fmt.Sprint(size)
	env[EnvClusterHosts] = strings.Join(s.ClusterHosts, ",")
	if s.Hostname != "" {
		env[EnvClusterHost] = s.Hostname
	}
	if len(s.ClusterAddrs) > 0 {
		env[EnvClusterAddrs] = strings.Join(s.ClusterAddrs, ",")
	}
	if s.Port != 0 {
		env[EnvPort] = fmt.Sprint(s.Port)
		env[EnvBindHost] = s.ServiceHost()
	}
	deviceEnv(s, env)
	return env
}

// LogFile is the name of a kernel's kept output in its directory.
const LogFile = "output.log"

// OpenLog opens the output log kept in a kernel's directory, from its
// beginning; a missing log is ErrNotFound.
func OpenLog(dir string, id domain.KernelID) (io.ReadCloser, error) {
	f, err := os.Open(filepath.Join(dir, LogFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("logs of %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", id, err)
	}
	return f, nil
}
