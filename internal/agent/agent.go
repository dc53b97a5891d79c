package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Config describes one agent.
type Config struct {
	ID            domain.AgentID
	ResourceGroup string
	// Manager is the manager's base URL, or several separated by commas to
	// fail over between; Token the agent token.
	Manager string
	Token   string
	// ManagerCAs, when set, are the authorities an https:// manager's
	// certificate must be signed by; nil trusts the system's.
	ManagerCAs *x509.CertPool
	// Listen is where the RPC server listens ("127.0.0.1:0" picks a port);
	// Advertise is the address given to the manager, the listener's when
	// empty.
	Listen    string
	Advertise string
	// KernelAddress is where kernels given a port bind it, and what their
	// service ports report: an address the manager reaches (see
	// ResolveAddresses). Empty keeps them on 127.0.0.1.
	KernelAddress string
	// Architecture defaults to this machine's (x86_64, aarch64).
	Architecture string
	// Capacity is what the agent offers; empty means detect the machine.
	Capacity map[string]string
	// Devices are the accelerators the agent hands out one by one (from
	// NVML, or declared fakes); New sets the capacity of their slots to
	// what they add up to.
	Devices []domain.Device
	// MaxKernels caps the kernels the manager places here, since each costs
	// the host processes and descriptors whatever its request says: zero
	// means DefaultMaxKernels, a negative value no cap.
	MaxKernels int
	// Runtime names the runtime for the manager's records.
	Runtime string
	// AllowsCommand tells the manager that the runtime runs a session's own
	// command; it must match the runtime's configuration, since the manager
	// refuses commands at submit when no agent of the group allows them.
	AllowsCommand bool
	Registry      *domain.Registry
	// HeartbeatInterval defaults to 5s, DestroyGrace to 10s; PullWait is
	// how long check_and_pull waits for a pull it started before answering
	// "pulling" (default 200ms), so a quick pull is ready in one call.
	HeartbeatInterval time.Duration
	// ManagerTimeout bounds one call to one manager before the agent tries
	// the next (agentrpc.DefaultCallTimeout when zero).
	ManagerTimeout time.Duration
	DestroyGrace   time.Duration
	PullWait       time.Duration
	Log            *slog.Logger
	// Identity, when set, is the agent's certificate: it calls managers
	// with it and serves its RPC over TLS to managers' certificates only.
	// Without it the agent token authenticates both ways, the insecure dev
	// mode in which any holder of the token may speak for any agent.
	Identity *Identity
}

// Agent is a running agent daemon.
type Agent struct {
	cfg Config
	mc  *agentrpc.ManagerClient
	rt  runtime.Runtime

	mu      sync.Mutex
	epoch   int64
	pulls   map[string]*pull
	queue   []domain.KernelEvent
	wake    chan struct{}
	addr    string
	started chan struct{}
	// starts bounds the kernels being started at once across calls.
	starts chan struct{}
}

type pull struct {
	done   chan struct{}
	failed string
}

// New checks the configuration and returns an agent; Run starts it.
// DefaultMaxKernels bounds an agent's kernels when its configuration does
// not.
const DefaultMaxKernels = 1000

func New(cfg Config) (*Agent, error) {
	if cfg.ID == "" || cfg.Manager == "" || cfg.ResourceGroup == "" {
		return nil, errors.New("agent: id, manager and resource group are required")
	}
	if cfg.Registry == nil {
		cfg.Registry = domain.DefaultRegistry()
	}
	if cfg.Architecture == "" {
		cfg.Architecture = Architecture()
	}
	cfg.Capacity = withMachine(cfg.Capacity)
	if _, err := cfg.Registry.ParseSlots(cfg.Capacity); err != nil {
		return nil, fmt.Errorf("agent: capacity: %w", err)
	}
	if err := withDevices(&cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxKernels == 0:
		cfg.MaxKernels = DefaultMaxKernels
	case cfg.MaxKernels < 0:
		cfg.MaxKernels = 0 // the wire's "no cap"
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	if cfg.DestroyGrace <= 0 {
		cfg.DestroyGrace = 10 * time.Second
	}
	if cfg.PullWait <= 0 {
		cfg.PullWait = 200 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	mc := agentrpc.NewManagerClient(cfg.Manager, cfg.Token)
	mc.CallTimeout = cfg.ManagerTimeout
	if cfg.ManagerCAs != nil {
		mc.TrustRoots(cfg.ManagerCAs)
	}
	if cfg.Identity != nil {
		// With an identity the manager is known by its cluster-CA
		// certificate alone, whatever --ca trusts.
		id, err := cfg.Identity.ID()
		if err != nil || id != cfg.ID {
			return nil, fmt.Errorf("agent: the certificate names %q, not agent %s (%v)", id, cfg.ID, err)
		}
		mc.UseTLS(cfg.Identity.clientTLS())
	}
	return &Agent{cfg: cfg, mc: mc, pulls: map[string]*pull{},
		wake: make(chan struct{}, 1), started: make(chan struct{}), starts: make(chan struct{}, createsAtOnce)}, nil
}

// Sink is the runtime.Sink to build the agent's runtime with: it queues
// events for the manager.
func (a *Agent) Sink(ev domain.KernelEvent) {
	if ev.Message == "" {
		// The wire carries only the message; a bare reason must not be lost.
		ev.Message = string(ev.Reason)
	}
	a.mu.Lock()
	a.queue = append(a.queue, ev)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func exitReason(r domain.ExitReason, msg string) string {
	if msg != "" {
		return msg
	}
	return string(r)
}

// Addr is the RPC address once Run has started listening.
func (a *Agent) Addr() string {
	<-a.started
	return a.addr
}

// flushWait bounds how long a stopping agent goes on sending the events
// its runtime's close queued, so an unreachable manager cannot hold up
// its exit.
const flushWait = 5 * time.Second

// Run serves until ctx ends, then closes the runtime, which stops its
// kernels, and sends the manager the events that say so.
func (a *Agent) Run(ctx context.Context, rt runtime.Runtime) error {
	a.rt = rt
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		close(a.started)
		return fmt.Errorf("agent %s: listen: %w", a.cfg.ID, err)
	}
	a.addr = ln.Addr().String()
	close(a.started)
	srv := &http.Server{Handler: a.handler(ctx), ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	if id := a.cfg.Identity; id != nil {
		ln = tls.NewListener(ln, id.serverTLS())
		wg.Add(1)
		go func() { defer wg.Done(); id.renewals(ctx, a.mc, time.Now, time.Minute, a.cfg.Log) }()
	}
	wg.Add(3)
	go func() { defer wg.Done(); _ = srv.Serve(ln) }()
	go func() { defer wg.Done(); a.heartbeats(ctx) }()
	go func() { defer wg.Done(); a.forward(ctx, false) }()
	<-ctx.Done()
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	err = rt.Close(shut)
	wg.Wait()
	// The kernels' ends were queued by Close, after forward stopped with
	// ctx: unsent, their sessions would stay RUNNING until the manager
	// declared this agent lost. forward has returned, so this is the one
	// sender, and the queue's order holds.
	flush, cancelFlush := context.WithTimeout(context.WithoutCancel(ctx), flushWait)
	defer cancelFlush()
	a.forward(flush, true)
	return err
}

func (a *Agent) advertise() string {
	if a.cfg.Advertise != "" {
		return a.cfg.Advertise
	}
	if a.cfg.Identity != nil {
		return "https://" + a.addr
	}
	return "http://" + a.addr
}

// register announces the agent until the manager answers.
func (a *Agent) register(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		reg, err := a.mc.Register(ctx, agentrpc.Register{
			ID: a.cfg.ID, ResourceGroup: a.cfg.ResourceGroup, Address: a.advertise(), Architecture: a.cfg.Architecture,
			Runtime: a.cfg.Runtime, Capacity: a.cfg.Capacity, MaxKernels: a.cfg.MaxKernels, Images: a.rt.Images(),
			Catalog: catalogOf(a.rt), Kernels: a.reports(), Waiting: a.waiting(), AllowsCommand: a.cfg.AllowsCommand,
			Devices: a.cfg.Devices, KernelAddress: a.cfg.KernelAddress,
		})
		if err == nil {
			a.mu.Lock()
			a.epoch = reg.Epoch
			a.mu.Unlock()
			a.cfg.Log.Info("registered", "agent", a.cfg.ID, "epoch", reg.Epoch)
			a.destroyAll(ctx, reg.Destroy)
			return nil
		}
		a.cfg.Log.Warn("register failed; retrying", "agent", a.cfg.ID, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (a *Agent) reports() []agentrpc.KernelReport {
	live := a.rt.Live()
	out := make([]agentrpc.KernelReport, len(live))
	for i, k := range live {
		out[i] = agentrpc.KernelReport{ID: k.ID, Running: k.Running, ExitCode: k.ExitCode, Reason: exitReason(k.Reason, k.Message),
			ServicePorts: k.Ports}
	}
	return out
}

// waiting lists the kernels the runtime has taken but not started, when
// it can say why they wait.
func (a *Agent) waiting() []agentrpc.WaitingKernel {
	wr, ok := a.rt.(runtime.WaitReporter)
	if !ok {
		return nil
	}
	var out []agentrpc.WaitingKernel
	for _, w := range wr.Waiting() {
		out = append(out, agentrpc.WaitingKernel{ID: w.ID, Note: w.Note})
	}
	return out
}

// capacity is what the runtime offers now, when it can say; nil leaves the
// manager's record as it is. A failed read is logged and skipped: a
// slurmctld outage must not make the agent look empty.
func (a *Agent) capacity(ctx context.Context) map[string]string {
	cr, ok := a.rt.(runtime.CapacityReporter)
	if !ok {
		return nil
	}
	caps, err := cr.Capacity(ctx)
	if err == nil {
		_, err = a.cfg.Registry.ParseSlots(caps)
	}
	if err != nil {
		a.cfg.Log.Warn("reading the runtime's capacity failed; the manager keeps the last one", "agent", a.cfg.ID, "err", err)
		return nil
	}
	return a.deviceCapacity(caps)
}

func (a *Agent) heartbeats(ctx context.Context) {
	if a.register(ctx) != nil {
		return
	}
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		epoch := a.epoch
		a.mu.Unlock()
		reply, err := a.mc.Heartbeat(ctx, agentrpc.Heartbeat{ID: a.cfg.ID, Epoch: epoch, Images: a.rt.Images(), Kernels: a.reports(),
			Capacity: a.capacity(ctx), Waiting: a.waiting()})
		if err != nil {
			a.cfg.Log.Warn("heartbeat failed", "agent", a.cfg.ID, "err", err)
			continue
		}
		if reply.Reregister {
			if a.register(ctx) != nil {
				return
			}
			continue
		}
		if id := a.cfg.Identity; id != nil && (reply.Renew || !id.trustsOnly(reply.Trusted)) {
			id.RenewSoon()
		}
		a.destroyAll(ctx, reply.Destroy)
	}
}

func (a *Agent) destroyAll(ctx context.Context, ids []domain.KernelID) {
	for _, id := range ids {
		if err := a.rt.Destroy(ctx, id, a.cfg.DestroyGrace); err != nil {
			a.cfg.Log.Warn("destroy for the manager failed", "kernel", id, "err", err)
		}
	}
}

// forward sends queued events in order, in batches, retrying a batch until
// the manager has taken it; nothing is dropped for a slow manager. It
// runs until ctx ends, or with drain until nothing is left to send.
func (a *Agent) forward(ctx context.Context, drain bool) {
	backoff := 50 * time.Millisecond
	for {
		a.mu.Lock()
		batch := a.queue[:min(len(a.queue), 256)]
		epoch := a.epoch
		a.mu.Unlock()
		if len(batch) == 0 || epoch == 0 {
			if drain {
				// All sent, or never registered: there is no epoch
				// to send them under.
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-a.wake:
			case <-time.After(time.Second):
			}
			continue
		}
		err := a.mc.Events(ctx, agentrpc.Events{ID: a.cfg.ID, Epoch: epoch, Events: batch})
		if err != nil && !agentrpc.IsRefused(err) {
			a.cfg.Log.Warn("sending events failed; retrying", "agent", a.cfg.ID, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		if err != nil {
			a.cfg.Log.Error("manager refused events; dropping the batch", "agent", a.cfg.ID, "err", err)
		}
		backoff = 50 * time.Millisecond
		a.mu.Lock()
		a.queue = a.queue[len(batch):]
		a.mu.Unlock()
	}
}

// Architecture names this machine's architecture as the manager does.
func Architecture() string {
	switch goruntime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return goruntime.GOARCH
}

// withMachine is capacity with the machine's cpu and mem wherever it
// does not name them: an agent told only its cpu (dev mode's --agent-cpu 4)
// would otherwise offer no memory, and every session, which must ask for
// some, would wait for a larger agent for ever. The caller's map is not
// changed: dev mode hands one to every local agent.
func withMachine(capacity map[string]string) map[string]string {
	out := maps.Clone(capacity)
	if out == nil {
		out = map[string]string{}
	}
	for slot, q := range DetectCapacity() {
		if _, ok := out[slot]; !ok {
			out[slot] = q
		}
	}
	return out
}

// DetectCapacity reads the machine's CPU count and memory.
func DetectCapacity() map[string]string {
	out := map[string]string{"cpu": strconv.Itoa(goruntime.NumCPU())}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) == 0 {
					continue
				}
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					out["mem"] = strconv.FormatInt(kb/1024, 10) + "m"
				}
			}
		}
	}
	return out
}

func (a *Agent) handler(ctx context.Context) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rpc/check_and_pull", func(w http.ResponseWriter, r *http.Request) {
		var in agentrpc.CheckAndPull
		if !agentrpc.ReadJSON(w, r, &in) {
			return
		}
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.PullStates{Images: a.checkAndPull(ctx, r.Context(), in.Images)})
	})
	mux.HandleFunc("POST /rpc/create_kernels", func(w http.ResponseWriter, r *http.Request) {
		var in agentrpc.CreateKernels
		if !agentrpc.ReadJSON(w, r, &in) {
			return
		}
		if !in.PerKernel {
			a.createAll(w, r.Context(), in.Kernels)
			return
		}
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.Created{Failed: a.createEach(r.Context(), in.Kernels)})
	})
	mux.HandleFunc("POST /rpc/destroy_kernel", func(w http.ResponseWriter, r *http.Request) {
		var in agentrpc.DestroyKernel
		if !agentrpc.ReadJSON(w, r, &in) {
			return
		}
		grace := a.cfg.DestroyGrace
		if in.Forced {
			grace = 0
		}
		if err := a.rt.Destroy(r.Context(), in.Kernel, grace); err != nil {
			agentrpc.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /rpc/kernels", func(w http.ResponseWriter, r *http.Request) {
		agentrpc.WriteJSON(w, http.StatusOK, a.reports())
	})
	mux.HandleFunc("GET /rpc/logs/{kernel}", func(w http.ResponseWriter, r *http.Request) {
		var offset int64
		if q := r.URL.Query().Get("offset"); q != "" {
			n, err := strconv.ParseInt(q, 10, 64)
			if err != nil || n < 0 {
				agentrpc.WriteError(w, http.StatusBadRequest, fmt.Errorf("offset %q is not a byte count", q))
				return
			}
			offset = n
		}
		rc, err := a.rt.Logs(domain.KernelID(r.PathValue("kernel")))
		if errors.Is(err, runtime.ErrNotFound) {
			agentrpc.WriteError(w, http.StatusNotFound, err)
			return
		}
		if err != nil {
			agentrpc.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		defer rc.Close()
		if offset > 0 {
			// A follower asks for what is new since its last read: a seek
			// keeps that cheap however long the log has grown.
			if s, ok := rc.(io.Seeker); ok {
				_, err = s.Seek(offset, io.SeekStart)
			} else {
				_, err = io.CopyN(io.Discard, rc, offset)
			}
			if err != nil && !errors.Is(err, io.EOF) {
				agentrpc.WriteError(w, http.StatusInternalServerError, err)
				return
			}
			w.Header().Set(agentrpc.LogOffsetHeader, strconv.FormatInt(offset, 10))
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.Copy(w, rc)
	})
	if a.cfg.Identity != nil {
		return mux // the TLS listener admits managers' certificates only
	}
	return agentrpc.RequireToken(a.cfg.Token, mux)
}

// checkAndPull answers per image, starting pulls as needed. A failure is
// reported once and then forgotten, so the next ask tries again.
func (a *Agent) checkAndPull(runCtx, reqCtx context.Context, images []string) map[string]agentrpc.PullState {
	have := map[string]bool{}
	for _, img := range a.rt.Images() {
		have[img] = true
	}
	out := make(map[string]agentrpc.PullState, len(images))
	var waits []chan struct{}
	a.mu.Lock()
	for _, img := range images {
		if have[img] {
			continue
		}
		p, ok := a.pulls[img]
		if !ok {
			p = &pull{done: make(chan struct{})}
			a.pulls[img] = p
			go a.pull(runCtx, img, p)
		}
		waits = append(waits, p.done)
	}
	a.mu.Unlock()
	deadline := time.NewTimer(a.cfg.PullWait)
	defer deadline.Stop()
	for _, ch := range waits {
		select {
		case <-ch:
		case <-deadline.C:
		case <-reqCtx.Done():
		}
	}
	for _, img := range a.rt.Images() {
		have[img] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, img := range images {
		switch p, ok := a.pulls[img]; {
		case have[img]:
			out[img] = agentrpc.PullState{Ready: true}
		case ok && p.failed != "":
			out[img] = agentrpc.PullState{Failed: p.failed}
			delete(a.pulls, img)
		default:
			out[img] = agentrpc.PullState{}
		}
	}
	return out
}

func (a *Agent) pull(ctx context.Context, img string, p *pull) {
	err := a.rt.Pull(ctx, img)
	a.mu.Lock()
	if err != nil {
		p.failed = err.Error()
	} else {
		delete(a.pulls, img)
	}
	a.mu.Unlock()
	close(p.done)
}

// createsAtOnce bounds the kernels the agent starts at once, whatever
// calls they came in: enough to overlap runtimes' waits (a fork and exec,
// a container start), few enough not to storm the host.
const createsAtOnce = 16

// createEach starts the kernels it is given, several at a time, and names
// each one it did not start. Every spec is checked before any kernel
// starts, and a session with one refused kernel has all its kernels of
// the call refused, so a refused session leaves nothing behind; a
// runtime's own checks can still refuse one kernel after others of its
// session started.
func (a *Agent) createEach(ctx context.Context, kernels []agentrpc.KernelSpec) []agentrpc.KernelFailure {
	specs := make([]runtime.Spec, len(kernels))
	refused := map[domain.SessionID]error{}
	for i, k := range kernels {
		spec, err := a.spec(k)
		if err == nil {
			err = spec.Validate()
		}
		if err != nil && refused[k.Session] == nil {
			refused[k.Session] = err
		}
		specs[i] = spec
	}
	errs := make([]error, len(kernels))
	var todo []int
	for i, k := range kernels {
		if err := refused[k.Session]; err != nil {
			errs[i] = err
			continue
		}
		todo = append(todo, i)
	}
	a.startAll(ctx, specs, todo, errs)
	var out []agentrpc.KernelFailure
	for i, err := range errs {
		if err == nil {
			continue
		}
		f := agentrpc.KernelFailure{Kernel: kernels[i].Kernel, Error: err.Error()}
		if errors.Is(err, runtime.ErrInvalidSpec) {
			f.Code = agentrpc.CodeInvalidSpec
		}
		out = append(out, f)
	}
	return out
}

// createAll answers a create_kernels of a manager of an earlier release,
// for the call as a whole: any refused spec refuses it before anything
// starts, and any failed start fails it.
func (a *Agent) createAll(w http.ResponseWriter, ctx context.Context, kernels []agentrpc.KernelSpec) {
	specs := make([]runtime.Spec, len(kernels))
	todo := make([]int, len(kernels))
	for i, k := range kernels {
		spec, err := a.spec(k)
		if err == nil {
			err = spec.Validate()
		}
		if err != nil {
			a.refuse(w, err)
			return
		}
		specs[i], todo[i] = spec, i
	}
	errs := make([]error, len(kernels))
	a.startAll(ctx, specs, todo, errs)
	for _, err := range errs {
		if err != nil {
			a.refuse(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// startAll creates specs[i] for each i of todo, at most createsAtOnce
// at a time across the agent, and leaves each one's error in errs[i].
func (a *Agent) startAll(ctx context.Context, specs []runtime.Spec, todo []int, errs []error) {
	var wg sync.WaitGroup
	for _, i := range todo {
		select {
		case a.starts <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Go(func() {
			defer func() { <-a.starts }()
			errs[i] = a.create(ctx, specs[i])
		})
	}
	wg.Wait()
}

// refuse answers a failed create_kernels: an invalid spec is the caller's
// to fix (400, invalid_spec), anything else the agent's fault (500).
func (a *Agent) refuse(w http.ResponseWriter, err error) {
	if errors.Is(err, runtime.ErrInvalidSpec) {
		agentrpc.WriteInvalidSpec(w, err)
		return
	}
	agentrpc.WriteError(w, http.StatusInternalServerError, err)
}

// spec turns the wire's kernel into the runtime's.
func (a *Agent) spec(k agentrpc.KernelSpec) (runtime.Spec, error) {
	slots, err := a.cfg.Registry.ParseSlots(k.Slots)
	if err != nil {
		return runtime.Spec{}, fmt.Errorf("kernel %s: %w", k.Kernel, err)
	}
	spec := runtime.Spec{KernelSpec: k.KernelSpec, Slots: slots, Registry: a.cfg.Registry,
		TimeLimit: time.Duration(k.TimeLimitMS) * time.Millisecond}
	if spec.Devices == nil && len(a.cfg.Devices) > 0 {
		spec.Devices = []domain.DeviceGrant{}
	}
	if k.ClusterIdx >= 0 && k.ClusterIdx < len(k.ClusterHosts) {
		spec.Hostname = k.ClusterHosts[k.ClusterIdx]
	}
	if len(k.ClusterAddrs) == len(k.ClusterHosts) {
		spec.ClusterAddrs = k.ClusterAddrs
	}
	spec.BindHost = a.cfg.KernelAddress
	if p, err := strconv.Atoi(k.Env["PORT"]); err == nil {
		spec.Port = p
	} else if k.Serves || strings.HasPrefix(k.Image, "http-") {
		if spec.Port, err = freePort(spec.ServiceHost()); err != nil {
			return runtime.Spec{}, err
		}
	}
	return spec, nil
}

func (a *Agent) create(ctx context.Context, spec runtime.Spec) error {
	err := a.rt.Create(ctx, spec)
	if errors.Is(err, runtime.ErrImageNotPulled) {
		// The image went with an earlier incarnation of this agent.
		if err := a.rt.Pull(ctx, spec.Image); err != nil {
			return err
		}
		err = a.rt.Create(ctx, spec)
	}
	return err
}

// freePort is a port free on host now, where the kernel will bind it.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// catalogOf is the runtime's catalog when it has one: a runtime that can
// run only the images it knows says which, so the manager can refuse a
// session no agent could run instead of letting it fail its pull later.
func catalogOf(rt runtime.Runtime) []string {
	if c, ok := rt.(interface{ Catalog() []string }); ok {
		return c.Catalog()
	}
	return nil
}
