package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/api"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/deploy"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/simulate"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/pgtest"
	"github.com/sokovan-go/sokovan/internal/store/postgres"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
)

// Engines are the store engines a test may run over.
var Engines = []string{"sqlite", "postgres"}

// AgentToken is the agent token of every test manager.
const AgentToken = "agent-secret-for-tests"

// Options shape a manager. Zero fields take the defaults.
type Options struct {
	Engine string // "sqlite" (default) or "postgres"
	// Agents is the number of agents in group "default" (default 2), each
	// with AgentCapacity (default cpu 8, mem 16g).
	Agents        int
	AgentCapacity map[string]string
	// AgentDevices, when set, are fake devices each agent hands out
	// ("cuda:2"), which set the capacity of their slots.
	AgentDevices string
	// Manual leaves the coordinator stopped: the test calls Cycle.
	Manual bool
	// API tunes the server (poll and heartbeat intervals, say).
	API api.Config
	// Logs, when set, serves GET /v1/sessions/{id}/logs.
	Logs api.LogsFunc
	// ServicePorts, when set, are what every started kernel reports it
	// serves on kernel_started, so a test can point them at a server of
	// its own.
	ServicePorts []domain.ServicePort
	// Estimate, when set, serves estimated_start from simulate's replay
	// of the group, as every manager does.
	Estimate bool
	// Deployments, when set, runs the deployment controller (a pass every
	// 20 ms) with its metrics on the manager's /metrics, as every
	// manager does; left out, deployments are stored but never served.
	Deployments bool
	// Share, when set, makes this manager a second replica of that
	// PostgreSQL one: it opens a store instance of its own on the same
	// database, and the same admin token and users are valid on both.
	Share *Manager
	// ClusterCA, when set, gives agents identities: a cluster CA is
	// stored and the API serves it (join tokens' ca, /v1/cluster-ca).
	ClusterCA bool
}

// Manager is one running manager.
type Manager struct {
	URL         string
	AdminToken  string
	Store       store.Store
	Coordinator *coordinator.Coordinator
	Agents      *Agents
	Slots       *domain.Registry
	Server      *api.Server
	t           testing.TB
	// db is the store's database, which Options.Share hands on.
	db string
}

func (opts Options) withDefaults() Options {
	if opts.Engine == "" {
		opts.Engine = "sqlite"
	}
	if opts.Agents == 0 {
		opts.Agents = 2
	}
	if opts.AgentCapacity == nil {
		opts.AgentCapacity = map[string]string{"cpu": "8", "mem": "16g"}
	}
	return opts
}

// database is the PostgreSQL database the manager opens ("" for SQLite
// in a temporary file): the shared manager's, or a new one.
func database(t testing.TB, opts Options) string {
	if opts.Share != nil {
		if opts.Engine != "postgres" || opts.Share.db == "" {
			t.Fatal("apitest: only a PostgreSQL manager can be shared")
		}
		return opts.Share.db
	}
	if opts.Engine == "postgres" {
		return pgtest.NewDatabase(t)
	}
	return ""
}

// New starts a manager and stops it when the test ends.
func New(t testing.TB, opts Options) *Manager {
	t.Helper()
	opts = opts.withDefaults()
	ctx := context.Background()
	reg := domain.DefaultRegistry()
	db := database(t, opts)
	st := open(t, opts.Engine, db, reg)
	if err := st.PutResourceGroup(ctx, domain.ResourceGroup{Name: "default", State: domain.GroupActive,
		Sequencer: "fifo", Selector: "dispersed", HeadOfLine: domain.HOLSkip, MaxRetries: 3,
		Timeouts: domain.DefaultTimeouts()}); err != nil {
		t.Fatal(err)
	}
	agents := &Agents{epochs: map[domain.AgentID]int64{}, running: map[domain.KernelID]domain.AgentID{},
		events: make(chan domain.KernelEvent, 1024), stopped: make(chan struct{}), ports: opts.ServicePorts}
	capacity, err := reg.ParseSlots(opts.AgentCapacity)
	if err != nil {
		t.Fatal(err)
	}
	devices, err := domain.ParseFakeDevices(opts.AgentDevices)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range domain.DeviceCapacity(reg, devices) {
		if q != 0 {
			capacity[i] = q
		}
	}
	for i := range opts.Agents {
		a, err := st.RegisterAgent(ctx, domain.Agent{ID: domain.AgentID(fmt.Sprintf("agent-%d", i)),
			ResourceGroup: "default", Address: "127.0.0.1:0", Architecture: "x86_64", Runtime: "test",
			Status: domain.AgentAlive, Schedulable: true, Capacity: capacity, AllowsCommand: true, Devices: devices}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		agents.epochs[a.ID] = a.Epoch
	}
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(coordinator.NewCollector(st, reg, nil))
	co := coordinator.New(coordinator.Deps{Store: st, Agents: agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
		Metrics: coordinator.NewMetrics(metrics)},
		coordinator.Config{ShortInterval: 20 * time.Millisecond, CallTimeout: 5 * time.Second})
	deps := api.Deps{Store: st, Sessions: co, Slots: reg, Plugins: scheduler.NewRegistry(),
		AgentToken: AgentToken, Gatherer: metrics, Registerer: metrics, Logs: opts.Logs,
		AgentRPC: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"agent_rpc":%q}`, r.URL.Path)
		}),
		Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if opts.ClusterCA {
		deps.ClusterCA = initClusterCA(t, st)
	}
	if opts.Estimate {
		deps.Estimate, deps.EstimateWith = simulate.Estimator(st, reg, clock.Wall), simulate.EstimatorWith(st, reg, clock.Wall)
	}
	// One admitter for the API and the deployments' routes, as a manager
	// shares one.
	deps.Admit = admit.New(admit.Deps{Store: st, Slots: reg, Marker: co},
		admit.Config{DefaultGroup: opts.API.DefaultGroup, DefaultArchitecture: opts.API.DefaultArchitecture})
	var ctl *deploy.Controller
	if opts.Deployments {
		ctl = deploy.New(deploy.Deps{Store: st, Admit: deps.Admit, Sessions: co, Registerer: metrics},
			deploy.Config{Interval: 20 * time.Millisecond})
		deps.Deploy = ctl
	}
	srv := api.New(opts.API, deps)
	if ctl != nil {
		ctl.UseLoad(srv)
	}
	admin := api.NewToken()
	if opts.Share != nil {
		admin = opts.Share.AdminToken
	}
	if err := api.EnsureAdmin(ctx, st, admin); err != nil {
		t.Fatal(err)
	}

	// Cleanups run last-registered first: streams end, the server stops,
	// the coordinator and the event pump stop, then the store closes.
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		agents.pump(runCtx, co)
	}()
	if !opts.Manual {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = co.Run(runCtx)
		}()
	}
	if ctl != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ctl.Run(runCtx)
		}()
	}
	t.Cleanup(func() { stop(); wg.Wait() })
	baseCtx, endStreams := context.WithCancel(ctx)
	hs := httptest.NewUnstartedServer(srv)
	hs.Config.BaseContext = func(net.Listener) context.Context { return baseCtx }
	hs.Start()
	t.Cleanup(func() { endStreams(); hs.Close() })
	return &Manager{URL: hs.URL, AdminToken: admin, Store: st, Coordinator: co, Agents: agents, Slots: reg, Server: srv, t: t, db: db}
}

// Open opens a fresh store of the engine, closed when the test ends.
// PostgreSQL tests are skipped where no server is reachable (failed under
// CI=true; see pgtest).
func Open(t testing.TB, engine string, reg *domain.Registry) store.Store {
	t.Helper()
	db := ""
	if engine == "postgres" {
		db = pgtest.NewDatabase(t)
	}
	return open(t, engine, db, reg)
}

// open opens a store of the engine: on PostgreSQL database db, on SQLite
// a new file.
func open(t testing.TB, engine, db string, reg *domain.Registry) store.Store {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	switch engine {
	case "sqlite":
		st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "sokovan.db"), sqlite.Options{Registry: reg})
	case "postgres":
		st, err = postgres.Open(ctx, db, postgres.Options{Registry: reg, MaxConns: 4})
	default:
		t.Fatalf("unknown engine %q", engine)
	}
	if err != nil {
		t.Fatalf("open %s: %v", engine, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// User creates a user through the API and returns its token.
func (m *Manager) User(name, role, project string) string {
	m.t.Helper()
	var out v1.NewUser
	body := v1.CreateUserRequest{Name: name, Role: role, Project: project}
	if code := m.Do(m.AdminToken, "POST", "/v1/users", body, &out); code != http.StatusCreated {
		m.t.Fatalf("create user %s: status %d", name, code)
	}
	return out.Token
}

// RegisterAgent registers agent id in group with capacity, or registers
// it again there (an agent restarted with another --resource-group moves
// so); the fake fleet runs its kernels under the new epoch, as it does
// the agents New starts with.
func (m *Manager) RegisterAgent(id domain.AgentID, group string, capacity map[string]string) {
	m.t.Helper()
	c, err := m.Slots.ParseSlots(capacity)
	if err != nil {
		m.t.Fatal(err)
	}
	a, err := m.Store.RegisterAgent(context.Background(), domain.Agent{ID: id, ResourceGroup: group, Address: "127.0.0.1:0",
		Architecture: "x86_64", Runtime: "test", Status: domain.AgentAlive, Schedulable: true, Capacity: c,
		AllowsCommand: true}, time.Now())
	if err != nil {
		m.t.Fatalf("register agent %s in %s: %v", id, group, err)
	}
	m.Agents.mu.Lock()
	m.Agents.epochs[id] = a.Epoch
	m.Agents.mu.Unlock()
}

// Do sends a request with a JSON body (nil for none; a string or []byte
// is sent as is), decodes a JSON answer into out when not nil, and
// returns the status.
func (m *Manager) Do(token, method, path string, body, out any) int {
	m.t.Helper()
	code, raw := m.Raw(token, method, path, body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			m.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return code
}

// Raw is Do returning the body as it came.
func (m *Manager) Raw(token, method, path string, body any) (int, []byte) {
	m.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			m.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, m.URL+path, rd)
	if err != nil {
		m.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		m.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, raw
}

// Eventually polls cond every 10 ms until it holds, failing the test with
// what after the deadline.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline, not synchronising
	}
}

// Agents stands in for the agent fleet: every call answers at once. Known
// images are "sleep" (runs until destroyed) and "exit:N" (exits with N as
// soon as it starts); any other image fails its pull. Kernel events go
// through a queue that a goroutine hands to the coordinator, as an event
// bus would.
type Agents struct {
	mu      sync.Mutex
	epochs  map[domain.AgentID]int64
	running map[domain.KernelID]domain.AgentID
	events  chan domain.KernelEvent
	// stopped is closed when the pump ends, so late events are dropped
	// rather than block their goroutines forever.
	stopped chan struct{}
	ports   []domain.ServicePort
}

func knownImage(img string) (exit int, exits, ok bool) {
	if img == "sleep" {
		return 0, false, true
	}
	if n, found := strings.CutPrefix(img, "exit:"); found {
		code, err := strconv.Atoi(n)
		return code, true, err == nil && code >= 0 && code <= 255
	}
	return 0, false, false
}

func (a *Agents) emit(ev domain.KernelEvent) {
	a.mu.Lock()
	ev.Epoch = a.epochs[ev.Agent]
	a.mu.Unlock()
	ev.At = time.Now()
	select {
	case a.events <- ev:
	case <-a.stopped:
	}
}

func (a *Agents) pump(ctx context.Context, co *coordinator.Coordinator) {
	defer close(a.stopped)
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-a.events:
			if err := co.HandleEvent(ctx, ev); err != nil && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "apitest: event %s: %v\n", ev.Kind, err)
			}
		}
	}
}

// SlowPull is an image whose pull never ends, for sessions that stay
// PREPARING.
const SlowPull = "slow-pull"

// CheckAndPull reports known images ready, SlowPull still pulling, and
// refuses the rest.
func (a *Agents) CheckAndPull(_ context.Context, _ domain.AgentID, images []string) (map[string]coordinator.PullState, error) {
	out := map[string]coordinator.PullState{}
	for _, img := range images {
		if img == SlowPull {
			out[img] = coordinator.PullState{} // still pulling, for ever
			continue
		}
		if _, _, ok := knownImage(img); ok {
			out[img] = coordinator.PullState{Ready: true}
		} else {
			out[img] = coordinator.PullState{Failed: fmt.Sprintf("image %q is not in the catalog", img)}
		}
	}
	return out, nil
}

// CreateKernels starts the kernels; exit:N kernels end at once.
func (a *Agents) CreateKernels(_ context.Context, agent domain.AgentID, specs []coordinator.KernelSpec) error {
	for _, s := range specs {
		a.mu.Lock()
		_, exists := a.running[s.Kernel]
		if !exists {
			a.running[s.Kernel] = agent
		}
		a.mu.Unlock()
		if exists {
			continue
		}
		// Queued from another goroutine: the events arrive after this
		// call returns, as they would from a real agent.
		go func() {
			a.emit(domain.KernelEvent{Kind: domain.EventKernelCreating, Agent: agent, Kernel: s.Kernel})
			a.emit(domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: agent, Kernel: s.Kernel, ContainerID: "c-" + string(s.Kernel),
				ServicePorts: a.ports})
			if code, exits, _ := knownImage(s.Image); exits {
				a.mu.Lock()
				delete(a.running, s.Kernel)
				a.mu.Unlock()
				a.emit(domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: agent, Kernel: s.Kernel, ExitCode: &code, Message: "exited"})
			}
		}()
	}
	return nil
}

// DestroyKernel stops a running kernel (exit 143) and returns once it has.
func (a *Agents) DestroyKernel(_ context.Context, agent domain.AgentID, kernel domain.KernelID, _ bool) error {
	a.mu.Lock()
	_, ok := a.running[kernel]
	delete(a.running, kernel)
	a.mu.Unlock()
	if ok {
		code := 143
		go a.emit(domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: agent, Kernel: kernel, ExitCode: &code, Message: "destroyed"})
	}
	return nil
}

// initClusterCA stores a cluster CA, as a manager giving agents
// identities does, and returns its certificate.
func initClusterCA(t testing.TB, st store.Store) []byte {
	certPEM, keyPEM, err := pki.NewCA("test cluster CA", time.Now())
	if err == nil {
		certPEM, _, err = st.InitClusterCA(context.Background(), certPEM, keyPEM, time.Now())
	}
	if err != nil {
		t.Fatal(err)
	}
	return certPEM
}
