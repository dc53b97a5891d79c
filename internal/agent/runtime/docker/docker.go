package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Labels every kernel container carries. Recover reads them back, so they
// are part of what a running agent leaves for its successor: change them
// only together with a way to read the old ones.
const (
	LabelAgent   = "sokovan.agent"
	LabelKernel  = "sokovan.kernel"
	LabelSession = "sokovan.session"
	LabelRole    = "sokovan.role"
	LabelIdx     = "sokovan.idx"
	// LabelImage keeps the image as the spec named it; the container's
	// own Config.Image may be rewritten by the engine.
	LabelImage = "sokovan.image"
	// LabelPort is the service port the kernel reported, as HOST:PORT; only
	// on containers that report one, so a restarted agent reports it again.
	LabelPort = "sokovan.port"
)

// NetworkHost is the network mode in which a kernel shares the host's
// network stack, the one mode in which its Spec.Port is reachable at the
// address it binds without publishing.
const NetworkHost = "host"

// ClusterSSHDir is where a kernel of a multi-kernel session finds its
// session's SSH key pair, mounted read-only: id_cluster (the private key,
// OpenSSH format, mode 0600), id_cluster.pub and authorized_keys (holding
// that public key). EnvClusterSSHDir names it in the kernel's environment.
const (
	ClusterSSHDir    = "/sokovan/ssh"
	EnvClusterSSHDir = "SOKOVAN_CLUSTER_SSH_DIR"
)

// EnvNVIDIAVisible is the variable the NVIDIA container toolkit's hook
// reads to choose the GPUs it mounts into a container.
const EnvNVIDIAVisible = "NVIDIA_VISIBLE_DEVICES"

// Config configures a Docker runtime.
type Config struct {
	// Host is the engine's address as DOCKER_HOST spells it, such as
	// "unix:///var/run/docker.sock"; empty means DOCKER_HOST from the
	// environment, then the client library's default.
	Host string
	// AgentID is written into every container's sokovan.agent label and
	// name, so Recover adopts this agent's kernels and no one else's.
	// Required; letters, digits, '.', '_' and '-'.
	AgentID string
	// DataDir holds, per kernel, the directory bind-mounted into cluster
	// kernels and the output kept after Destroy, and per session the
	// cluster SSH key. Required. The engine must see the same filesystem
	// (it runs on the agent's host), as bind mounts name host paths.
	DataDir string
	// Sink receives events; nil discards them.
	Sink runtime.Sink
	// NetworkMode is every kernel's network mode; empty means "none".
	NetworkMode string
	// PidsMax caps each kernel's processes when its spec asks for no
	// "pids" slot; zero means no cap.
	PidsMax int64
	// ClusterKeySecret, when set, derives each session's cluster SSH key
	// from an HMAC of the session id under this secret, so that every
	// agent configured with it gives the kernels of a multi-node session
	// the same key. Without it each agent generates a random key per
	// session, which only the session's kernels on that agent share.
	ClusterKeySecret []byte
	// CloseGrace is the grace Close gives each kernel; zero means 5s.
	CloseGrace time.Duration
	// KeepLogBytes is how much of a kernel's output (its end) Destroy
	// copies out of the engine before removing the container, so Logs
	// still answers afterwards; zero means 1 MiB, negative keeps none.
	KeepLogBytes int64
	// Now stamps pull events and the start of created kernels; nil means
	// time.Now. Exits carry the engine's own times.
	Now func() time.Time
	// Log receives warnings about cleanup that failed; nil discards them.
	Log *slog.Logger
}

const (
	defaultCloseGrace   = 5 * time.Second
	defaultKeepLogBytes = 1 << 20
	defaultNetworkMode  = "none"
	// detachedTimeout bounds the engine calls that clean up after a
	// failure or force a stop; they run detached from the caller's
	// context, which may be what has just ended.
	detachedTimeout = 30 * time.Second
	// killWait bounds how long Destroy, once its context has ended and it
	// has sent SIGKILL, waits to see the kernel stop.
	killWait = 5 * time.Second
	// retryWait spaces a watcher's questions to an engine that did not
	// answer.
	retryWait = time.Second
)

var _ runtime.Runtime = (*Runtime)(nil)

// Runtime runs kernels as containers. See the package doc.
type Runtime struct {
	cfg Config
	cli *client.Client
	now func() time.Time
	log *slog.Logger
	out *runtime.Outbox

	// bg scopes what outlives the call that started it: exit watchers and
	// log streams. Close cancels it once every kernel has been destroyed.
	bg       context.Context
	cancelBG context.CancelFunc
	watchers sync.WaitGroup

	// keyMu serialises the cluster key files.
	keyMu sync.Mutex

	kernels *runtime.Table[box]
	images  *runtime.Images

	// mu guards box.polite.
	mu sync.Mutex
}

// kernel is one kernel's entry in the runtime's table.
type kernel = runtime.Kernel[box]

// box is what the Docker runtime keeps of a kernel beside the table's
// part: its container.
type box struct {
	// container is the engine's id, set before the kernel is listed.
	container string

	// removeMu makes concurrent Destroys remove the container once.
	removeMu sync.Mutex
	removed  bool

	// polite: Destroy stops it with a grace period (SIGTERM first), not an
	// immediate SIGKILL. Guarded by Runtime.mu.
	polite bool
}

// New connects to the engine, negotiating the API version, and returns a
// runtime. It does not look at containers an earlier run left: Recover
// does.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if err := validName(cfg.AgentID); err != nil {
		return nil, fmt.Errorf("docker runtime: agent id: %w", err)
	}
	if cfg.DataDir == "" {
		return nil, errors.New("docker runtime: no data dir")
	}
	dir, err := runtime.PrivateDir(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	cfg.DataDir = dir
	if cfg.NetworkMode == "" {
		cfg.NetworkMode = defaultNetworkMode
	}
	if cfg.CloseGrace == 0 {
		cfg.CloseGrace = defaultCloseGrace
	}
	if cfg.KeepLogBytes == 0 {
		cfg.KeepLogBytes = defaultKeepLogBytes
	}
	opt := client.FromEnv
	if cfg.Host != "" {
		opt = client.WithHost(cfg.Host)
	}
	cli, err := client.New(opt)
	if err != nil {
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker runtime: engine at %s: %w", cli.DaemonHost(), err)
	}
	r := &Runtime{cfg: cfg, cli: cli, out: runtime.NewOutbox(cfg.Sink)}
	r.now, r.log = runtime.ClockAndLog(cfg.Now, cfg.Log)
	r.kernels = runtime.NewTable[box](r.out, r.now)
	r.images = runtime.NewImages(r.out, r.now)
	// Detached from New's context, which only bounds the connection
	// check; Close ends it.
	r.bg, r.cancelBG = context.WithCancel(context.WithoutCancel(ctx))
	return r, nil
}

// validName accepts what may go into container names and file names:
// letters, digits, '.', '_' and '-', not starting with '.' or '-'.
func validName(s string) error {
	if s == "" || len(s) > 128 {
		return fmt.Errorf("%q must be 1 to 128 characters", s)
	}
	if s[0] == '.' || s[0] == '-' {
		return fmt.Errorf("%q may not start with %q", s, s[0])
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q may hold only letters, digits, '.', '_' and '-'", s)
		}
	}
	return nil
}

// ContainerName is the name the runtime of agent gives kernel id's
// container.
func ContainerName(agent string, id domain.KernelID) string {
	return "sokovan-" + agent + "-" + string(id)
}

func (r *Runtime) containerName(id domain.KernelID) string { return ContainerName(r.cfg.AgentID, id) }

func (r *Runtime) kernelDir(id domain.KernelID) string {
	return filepath.Join(r.cfg.DataDir, "kernels", string(id))
}

// detached returns a context for cleanup that must happen even though ctx
// has ended.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), detachedTimeout)
}

// ContainerID returns the engine's id of a kernel's container.
func (r *Runtime) ContainerID(id domain.KernelID) (string, bool) {
	k, _, ok := r.kernels.Lookup(id)
	if !ok {
		return "", false
	}
	return k.Own.container, true
}

// Images lists the images Pull (or Create) found available.
func (r *Runtime) Images() []string { return r.images.List() }

// Live lists the kernels that have started and were not destroyed,
// including those Recover adopted.
func (r *Runtime) Live() []runtime.KernelState { return r.kernels.Live() }

// Create creates and starts a kernel's container and returns once the
// engine has started it. When the engine already holds this agent's
// container for the kernel (an earlier life of the agent made it), Create
// takes it over instead: a running or exited one is adopted as it is, one
// that was created but never started is replaced.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	return r.kernels.Create(ctx, spec, nil, func(ctx context.Context, k *kernel) error {
		return r.create(ctx, k, spec)
	})
}

// create does Create's work for k, which is in the table but not started.
// It lists k and reports it: kernel_started, or kernel_terminated for an
// adopted container that had already exited.
func (r *Runtime) create(ctx context.Context, k *kernel, spec runtime.Spec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := r.containerName(spec.Kernel)
	handled, err := r.takeOver(ctx, k, name)
	if handled || err != nil {
		return err
	}
	if err := r.ensureImage(ctx, spec.Image); err != nil {
		return err
	}
	sshDir, err := r.prepareKernelDir(spec)
	if err != nil {
		return err
	}
	cfg, host := r.containerConfig(spec, sshDir)
	created, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: host})
	if cerrdefs.IsConflict(err) {
		// Another runtime with this agent id made it between our look and
		// our create; take that one over rather than fail.
		handled, terr := r.takeOver(ctx, k, name)
		if handled || terr != nil {
			return terr
		}
		_ = os.RemoveAll(r.kernelDir(spec.Kernel))
		return fmt.Errorf("%w: container %s was made by someone else and is gone again; try again: %w", runtime.ErrCreateFailed, name, err)
	}
	if err != nil {
		_ = os.RemoveAll(r.kernelDir(spec.Kernel))
		return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	// Taken before the start so that FinishedAt-StartedAt never
	// understates how long the program ran.
	startedAt := r.now()
	if _, err := r.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		// The engine may have started it just before ctx ended; a forced
		// removal stops it too.
		r.removeQuietly(ctx, created.ID)
		_ = os.RemoveAll(r.kernelDir(spec.Kernel))
		return fmt.Errorf("%w: start: %w", runtime.ErrCreateFailed, err)
	}
	k.Own.container = created.ID
	k.Ports = r.servicePorts(spec)
	r.kernels.Start(k, startedAt)
	r.watch(k)
	return nil
}

// takeOver looks for an existing container named name and, when there is
// one, adopts it into k and reports what it found. handled says the caller
// is done: k now stands for that container. A container that was created
// but never started is removed and handled is false, so the caller creates
// a fresh one.
func (r *Runtime) takeOver(ctx context.Context, k *kernel, name string) (handled bool, err error) {
	insp, err := r.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: inspect %s: %w", runtime.ErrCreateFailed, name, err)
	}
	kind, ev, err := r.adopt(k, insp.Container)
	switch {
	case err != nil:
		return false, fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	case kind == adoptedRunning, kind == adoptedExited:
		r.out.Emit(ev)
		if kind == adoptedRunning {
			r.watch(k)
		}
		return true, nil
	case kind == notStarted:
		if _, err := r.cli.ContainerRemove(ctx, insp.Container.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return false, fmt.Errorf("%w: remove a never-started container %s: %w", runtime.ErrCreateFailed, name, err)
		}
		return false, nil
	default: // being removed by the engine
		return false, fmt.Errorf("%w: container %s is being removed; try again", runtime.ErrCreateFailed, name)
	}
}

// ensureImage checks that the engine holds image, which Pull (or anyone)
// put there.
func (r *Runtime) ensureImage(ctx context.Context, image string) error {
	if r.images.Have(image) {
		return nil
	}
	ok, err := r.imagePresent(ctx, image)
	if err != nil {
		return fmt.Errorf("%w: inspect image %q: %w", runtime.ErrCreateFailed, image, err)
	}
	if !ok {
		return fmt.Errorf("%w: %q", runtime.ErrImageNotPulled, image)
	}
	r.images.Add(image)
	return nil
}

func (r *Runtime) imagePresent(ctx context.Context, image string) (bool, error) {
	_, err := r.cli.ImageInspect(ctx, image)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// prepareKernelDir gives the kernel a fresh directory (a kernel id reused
// after a requeue must not see its predecessor's files) and, for a
// multi-kernel session, writes the session's SSH key pair into it. It
// returns the SSH directory to mount, or "".
func (r *Runtime) prepareKernelDir(spec runtime.Spec) (string, error) {
	dir := r.kernelDir(spec.Kernel)
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	if spec.ClusterSize <= 1 {
		return "", nil
	}
	sshDir := filepath.Join(dir, "ssh")
	if err := r.writeClusterSSH(spec.Session, sshDir); err != nil {
		return "", err
	}
	return sshDir, nil
}

// containerConfig turns a spec into the engine's container and host
// configuration.
func (r *Runtime) containerConfig(spec runtime.Spec, sshDir string) (*container.Config, *container.HostConfig) {
	env := runtime.KernelEnv(spec)
	// The engine maps the granted GPUs into the container, where CUDA
	// numbers them from zero: the host's indexes would name the wrong ones.
	// A user's own value only narrows what the container already holds.
	delete(env, runtime.EnvCUDAVisible)
	if v, ok := spec.Env[runtime.EnvCUDAVisible]; ok {
		env[runtime.EnvCUDAVisible] = v
	}
	gpus := gpuIDs(spec)
	env[EnvNVIDIAVisible] = nvidiaVisible(gpus)
	if sshDir != "" {
		env[EnvClusterSSHDir] = ClusterSSHDir
	}
	envList := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	role := spec.ClusterRole
	if role == "" {
		role = domain.RoleMain
	}
	cfg := &container.Config{
		Image:    spec.Image,
		Hostname: spec.Hostname,
		Env:      envList,
		Labels: map[string]string{
			LabelAgent:   r.cfg.AgentID,
			LabelKernel:  string(spec.Kernel),
			LabelSession: string(spec.Session),
			LabelRole:    role,
			LabelIdx:     strconv.Itoa(spec.ClusterIdx),
			LabelImage:   spec.Image,
		},
	}
	for _, p := range r.servicePorts(spec) {
		cfg.Labels[LabelPort] = net.JoinHostPort(p.Host, strconv.Itoa(p.Port))
	}
	if len(spec.Command) > 0 {
		// Spec.Command replaces the image's whole command line, and the
		// engine runs Entrypoint followed by Cmd.
		cfg.Entrypoint = slices.Clone(spec.Command[:1])
		cfg.Cmd = slices.Clone(spec.Command[1:])
	}
	host := &container.HostConfig{NetworkMode: container.NetworkMode(r.cfg.NetworkMode), ExtraHosts: clusterHosts(spec, r.cfg.NetworkMode)}
	if mem := int64(spec.Slot("mem")); mem > 0 {
		host.Memory = mem
		host.MemorySwap = mem
	}
	if cpuMilli := int64(spec.Slot("cpu")); cpuMilli > 0 {
		host.NanoCPUs = cpuMilli * 1_000_000 // a count slot stores thousandths
	}
	pids := int64(spec.Slot("pids")) / 1000
	if pids == 0 {
		pids = r.cfg.PidsMax
	}
	if pids > 0 {
		host.PidsLimit = &pids
	}
	if sshDir != "" {
		host.Mounts = []mount.Mount{{Type: mount.TypeBind, Source: sshDir, Target: ClusterSSHDir, ReadOnly: true}}
	}
	if len(gpus) > 0 {
		// The engine's GPU driver (the NVIDIA container toolkit) puts
		// exactly these devices in the container.
		host.DeviceRequests = []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: gpus, Capabilities: [][]string{{"gpu"}}}}
	}
	return cfg, host
}

// clusterHosts are the container's /etc/hosts entries for the session's
// kernels, "main0:ADDR", so a kernel reaches a peer on another host by its
// cluster hostname. Only where the container has a network to reach them
// through, and only for addresses (the engine takes no names there).
func clusterHosts(spec runtime.Spec, mode string) []string {
	if mode == defaultNetworkMode || len(spec.ClusterAddrs) != len(spec.ClusterHosts) {
		return nil
	}
	var out []string
	for i, h := range spec.ClusterHosts {
		if net.ParseIP(spec.ClusterAddrs[i]) != nil {
			out = append(out, h+":"+spec.ClusterAddrs[i])
		}
	}
	return out
}

// servicePorts is what the kernel reports it serves: its spec's port, as
// the process runtime reports it, in the host's network, where the kernel
// binds the host's own address. In any other mode the port is inside the
// container's network namespace, unpublished, and nothing on the host
// reaches it: reporting it would send the proxy and health checks to an
// address where nothing, or something else, listens.
func (r *Runtime) servicePorts(spec runtime.Spec) []domain.ServicePort {
	if r.cfg.NetworkMode != NetworkHost {
		return nil
	}
	return spec.ServicePorts()
}

// gpuIDs are the kernel's granted GPUs as the toolkit names them, by UUID
// where known.
func gpuIDs(spec runtime.Spec) []string {
	var ids []string
	for _, g := range spec.Grants() {
		if strings.HasPrefix(g.Slot, "cuda.") {
			ids = append(ids, runtime.VisibleID(g))
		}
	}
	return ids
}

// nvidiaVisible is NVIDIA_VISIBLE_DEVICES for a kernel granted gpus. The
// device request alone is not enough: on an engine whose default runtime
// is nvidia, the hook also honours the variable, and the CUDA base images
// set it to "all", so a kernel granted none would see every GPU. "void"
// is the toolkit's value for no GPU and no driver files (where "none"
// still mounts the driver's libraries). It is set whether or not the
// agent hands out devices: a GPU the scheduler did not grant is never the
// kernel's.
func nvidiaVisible(gpus []string) string {
	if len(gpus) == 0 {
		return "void"
	}
	return strings.Join(gpus, ",")
}

// removeQuietly force-removes a container after a failure, whatever ctx
// has become.
func (r *Runtime) removeQuietly(ctx context.Context, cid string) {
	dctx, cancel := detached(ctx)
	defer cancel()
	if _, err := r.cli.ContainerRemove(dctx, cid, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		r.log.Warn("docker runtime: could not remove a container after a failed create", "container", cid, "err", err)
	}
}

// Destroy stops a kernel's container, politely with the engine's stop (the
// image's stop signal, SIGTERM unless it names another, then SIGKILL after
// grace rounded up to whole seconds, the engine's unit) or at once with
// SIGKILL when grace is zero, waits for its exit to be recorded and
// reported, keeps the end of its output, and removes the container. A
// kernel this runtime does not know but whose container the engine holds
// under this agent's name is destroyed too.
func (r *Runtime) Destroy(ctx context.Context, id domain.KernelID, grace time.Duration) error {
	if runtime.ValidKernelID(id) != nil {
		return nil // no kernel can have such an id
	}
	k := r.kernels.Get(id)
	if k == nil {
		var err error
		if k, err = r.findUnknown(ctx, id); err != nil {
			return fmt.Errorf("destroy kernel %s: %w", id, err)
		}
		if k == nil {
			return nil
		}
	}
	err := r.kernels.Destroy(ctx, k, func(ctx context.Context, k *kernel) error {
		if err := r.stop(ctx, k, grace); err != nil {
			return err
		}
		return r.remove(ctx, k)
	})
	if err != nil || k.Err() != nil {
		return err
	}
	r.dropSessionKeyIfUnused(k.Session)
	return nil
}

// findUnknown adopts the container the engine holds for a kernel this
// runtime does not know, so that Destroy works after a restart that was
// not followed by Recover. Nil when there is none. An exited one is not
// reported: the caller is ending it anyway.
func (r *Runtime) findUnknown(ctx context.Context, id domain.KernelID) (*kernel, error) {
	insp, err := r.cli.ContainerInspect(ctx, r.containerName(id), client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r.adoptExisting(ctx, id, insp.Container, false)
}

// stop stops a started kernel's container and waits until its exit has
// been recorded.
func (r *Runtime) stop(ctx context.Context, k *kernel, grace time.Duration) error {
	// Before the mark, so that the exit the mark lets be recorded as
	// destroyed never misses it.
	r.mu.Lock()
	k.Own.polite = grace > 0
	r.mu.Unlock()
	if running, _ := r.kernels.Destroying(k); !running {
		return nil
	}
	cid := k.Own.container

	var err error
	if grace > 0 {
		secs := int((grace + time.Second - 1) / time.Second)
		_, err = r.cli.ContainerStop(ctx, cid, client.ContainerStopOptions{Timeout: &secs})
	} else {
		_, err = r.cli.ContainerKill(ctx, cid, client.ContainerKillOptions{Signal: "KILL"})
	}
	// Not found: removed behind our back; conflict: it was not running.
	// Either way the watcher records the end.
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		if ctx.Err() == nil {
			return err
		}
		return r.forceStop(ctx, k, cid)
	}
	select {
	case <-k.Done():
		return nil
	case <-ctx.Done():
		return r.forceStop(ctx, k, cid)
	}
}

// forceStop kills a kernel whose Destroy context has ended, and waits a
// bounded time for its exit to be recorded.
func (r *Runtime) forceStop(ctx context.Context, k *kernel, cid string) error {
	r.mu.Lock()
	k.Own.polite = false // killed because the caller stopped waiting, not after the grace
	r.mu.Unlock()
	dctx, cancel := detached(ctx)
	defer cancel()
	if _, err := r.cli.ContainerKill(dctx, cid, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		r.log.Warn("docker runtime: could not kill a kernel", "kernel", k.ID, "err", err)
	}
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-k.Done():
		return nil
	case <-t.C:
		return ctx.Err()
	}
}

// remove keeps the end of a stopped kernel's output, then removes its
// container and SSH files.
func (r *Runtime) remove(ctx context.Context, k *kernel) error {
	b := &k.Own
	b.removeMu.Lock()
	defer b.removeMu.Unlock()
	if b.removed {
		return nil
	}
	cid := b.container
	if r.cfg.KeepLogBytes > 0 {
		if err := r.keepLogs(ctx, k.ID, cid); err != nil {
			r.log.Warn("docker runtime: could not keep a kernel's output", "kernel", k.ID, "err", err)
		}
	}
	if _, err := r.cli.ContainerRemove(ctx, cid, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove container: %w", err)
	}
	// With output kept, the directory stays for Logs, like the process
	// runtime's logs, until the data dir's owner cleans it.
	leftover := r.kernelDir(k.ID)
	if r.cfg.KeepLogBytes > 0 {
		leftover = filepath.Join(leftover, "ssh")
	}
	if err := os.RemoveAll(leftover); err != nil {
		r.log.Warn("docker runtime: could not remove a kernel's files", "kernel", k.ID, "err", err)
	}
	b.removed = true
	return nil
}

// keepLogs copies the last KeepLogBytes of the container's output to the
// kernel's directory.
func (r *Runtime) keepLogs(ctx context.Context, id domain.KernelID, cid string) error {
	rc, err := r.cli.ContainerLogs(ctx, cid, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	tail := &tailBuffer{max: int(r.cfg.KeepLogBytes)}
	if _, err := io.Copy(tail, newDemux(rc)); err != nil {
		return err
	}
	dir := r.kernelDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, runtime.LogFile), tail.Bytes(), 0o600)
}

// Logs returns the kernel's stdout and stderr, interleaved as the engine
// recorded them (each stream in order; between the two, as near as the
// engine's separate readers of them came): from the engine while the
// container exists, from the copy Destroy kept afterwards. An unknown
// kernel fails with ErrNotFound.
func (r *Runtime) Logs(id domain.KernelID) (io.ReadCloser, error) {
	if err := runtime.ValidKernelID(id); err != nil {
		return nil, err
	}
	if k, _, ok := r.kernels.Lookup(id); ok {
		cid := k.Own.container
		// bg, not a caller's context: the interface gives Logs none, and
		// the stream must outlive this call until the reader is closed.
		rc, err := r.cli.ContainerLogs(r.bg, cid, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
		if err == nil {
			return newDemux(rc), nil
		}
		if !cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("logs of %s: %w", id, err)
		}
	}
	return runtime.OpenLog(r.kernelDir(id), id)
}

// Close destroys every kernel with CloseGrace (their containers are
// removed), stops the watchers, closes the engine connection and delivers
// the remaining events.
func (r *Runtime) Close(ctx context.Context) error {
	return runtime.Shutdown[box]{Images: r.images, Kernels: r.kernels, Destroy: r.Destroy, Grace: r.cfg.CloseGrace,
		Stop: func() error {
			r.cancelBG()
			// The watchers are the connection's last users.
			r.watchers.Wait()
			if err := r.cli.Close(); err != nil {
				return fmt.Errorf("close: %w", err)
			}
			return nil
		},
		Out: r.out}.Run(ctx)
}
