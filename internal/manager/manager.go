package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/agentgw"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/config"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/deploy"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/events"
	"github.com/sokovan-go/sokovan/internal/hook"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/postgres"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
)

// Config describes a manager.
type Config struct {
	// DB is "postgres://…" or a SQLite file path (optionally "sqlite://path").
	DB string
	// Listen is the HTTP address ("127.0.0.1:8470"; port 0 picks one).
	Listen string
	// TLSCert and TLSKey, when set (both or neither), are PEM files the
	// manager serves HTTPS with — the API, the dashboard, the proxies and
	// the agent endpoints alike. They are read again when they change.
	TLSCert, TLSKey string
	// Events, when set ("redis://…"), carries agent events between
	// managers on Redis Streams; otherwise the receiving manager applies
	// them.
	Events string
	// EventsStream names the stream (default "sokovan:agent-events"); every
	// manager of one cluster must use the same.
	EventsStream string
	// Config, when set, is where shared settings live: "etcd://host:port
	// [,host:port]/key" (watched; with etcd the managers also elect which of
	// them runs the handlers) or "file:///path" (polled). Changes apply
	// without a restart.
	Config string
	// AgentToken authenticates agents both ways, unless AgentIdentity.
	// Anyone holding it may speak for any agent: it is the insecure mode,
	// for dev and trusted networks (`sokovan server` runs it only with
	// --insecure-shared-agent-token). With AgentIdentity alone it may be
	// empty.
	AgentToken string
	// AgentIdentity gives every agent an identity: a certificate of the
	// cluster CA (kept in the store, made by the first manager) that it
	// gets by joining with a join token; managers serve TLS and agents'
	// calls are known by their certificates. AgentCertTTL is an agent
	// certificate's lifetime (agentgw.DefaultCertTTL when zero);
	// AgentTokenAllowed keeps agents without a certificate working with
	// the agent token, while they are moved over.
	AgentIdentity     bool
	AgentCertTTL      time.Duration
	AgentTokenAllowed bool
	Coordinator       coordinator.Config
	// Deploy tunes the deployment controller; zero fields take defaults.
	Deploy deploy.Config
	Log    *slog.Logger
	// UserAPI builds the user-facing handler from the running parts; nil
	// serves only health, metrics and the agent gateway.
	UserAPI func(Parts) (http.Handler, error)
}

// Parts are the running pieces a user API is built from.
type Parts struct {
	Store       store.Store
	Coordinator *coordinator.Coordinator
	Slots       *domain.Registry
	Plugins     *scheduler.Registry
	// Hooks are the session-type hooks the coordinator and the API share.
	Hooks      *hook.Registry
	Agents     *agentrpc.AgentClient
	Gateway    http.Handler
	Gatherer   prometheus.Gatherer
	Registerer prometheus.Registerer
	AgentToken string
	// ClusterCA is the cluster CA's certificate (PEM) when agents have
	// identities (Config.AgentIdentity).
	ClusterCA []byte
	// IdentityChanged, set when agents have identities, makes the manager
	// act at once on an `agent rm` or a CA rotation it served.
	IdentityChanged func(context.Context)
	// Admit admits sessions; the user API and the deployments' routes
	// share it.
	Admit *admit.Admitter
	// Deploy drives model-serving deployments.
	Deploy *deploy.Controller
}

// Manager is a started manager.
type Manager struct {
	Parts
	bus    *events.Redis
	gw     *agentgw.Gateway
	lease  *loggedLease
	source config.Source
	etcd   *config.Etcd
	addr   string
	tls    bool
	srv    *http.Server
	ln     net.Listener
	log    *slog.Logger
	cfg    Config
	// identity is the manager's certificate when AgentIdentity is on.
	identity *identity

	// sampler records utilisation under the coordinator's lease.
	sampler *Sampler
}

// Open opens the store and builds everything; Run starts serving.
func Open(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.AgentToken == "" && (!cfg.AgentIdentity || cfg.AgentTokenAllowed) {
		// Only identities alone need no shared token: nothing then
		// accepts one.
		return nil, errors.New("manager: an agent token is required without agent identities, or beside them with AgentTokenAllowed")
	}
	slots := domain.DefaultRegistry()
	st, err := openStore(ctx, cfg.DB, slots)
	if err != nil {
		return nil, err
	}
	if err := ensureDefaultGroup(ctx, st); err != nil {
		st.Close()
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}),
		coordinator.NewCollector(st, slots, cfg.Log))
	plugins := scheduler.NewRegistry()
	hooks := hook.Standard()
	agents := agentrpc.NewAgentClient(st, cfg.AgentToken)
	var lease *loggedLease
	deps := coordinator.Deps{Store: st, Agents: agentgw.NewAgents(agents, slots), Scheduler: scheduler.New(plugins),
		Metrics: coordinator.NewMetrics(reg), Log: cfg.Log, Hooks: hooks}
	source, etcd, err := openSource(cfg.Config, cfg.Log)
	if err != nil {
		st.Close()
		return nil, err
	}
	if etcd != nil {
		host, _ := os.Hostname()
		// The election lives beside the settings key, so clusters sharing
		// an etcd keep apart.
		lease = &loggedLease{heldLease: etcd.Elect(etcd.Key()+"/leader", fmt.Sprintf("%s-%d", host, os.Getpid()), 5),
			kind: "etcd election", log: cfg.Log}
		deps.Lease = lease
	} else if pg, ok := st.(*postgres.Store); ok {
		// Several managers may share this schema: one at a time runs the
		// handlers.
		lease = &loggedLease{heldLease: pg.Lease("coordinator", time.Second), kind: "PostgreSQL advisory lock", log: cfg.Log}
		deps.Lease = lease
	}
	coord := coordinator.New(deps, cfg.Coordinator)
	sampler := NewSampler(st, deps.Lease, nil, cfg.Log)
	gw := agentgw.New(st, coord, slots, cfg.AgentToken, nil, cfg.Log)
	admitter := admit.New(admit.Deps{Store: st, Slots: slots, Hooks: hooks, Marker: coord}, admit.Config{})
	deployer := deploy.New(deploy.Deps{Store: st, Admit: admitter, Sessions: coord, Lease: deps.Lease, Log: cfg.Log,
		Registerer: reg}, cfg.Deploy)
	m := &Manager{Parts: Parts{Store: st, Coordinator: coord, Slots: slots, Plugins: plugins, Hooks: hooks, Agents: agents,
		Gateway: gw, Gatherer: reg, Registerer: reg, AgentToken: cfg.AgentToken, Admit: admitter, Deploy: deployer}, gw: gw, lease: lease, source: source, etcd: etcd, log: cfg.Log, cfg: cfg, sampler: sampler}
	if cfg.AgentIdentity {
		if m.identity, err = openIdentity(ctx, st, cfg.Listen, cfg.Log); err != nil {
			st.Close()
			return nil, err
		}
		m.identity.wire(gw, agents, st, cfg.AgentCertTTL, cfg.AgentTokenAllowed)
		m.ClusterCA = m.identity.ca.Bundle()
		m.IdentityChanged = func(ctx context.Context) { m.identity.changed(ctx, gw, agents, true) }
	} else {
		cfg.Log.Warn("INSECURE: agents are authenticated by the shared agent token (sokovan dev, or server " +
			"--insecure-shared-agent-token): " +
			"anyone holding it may speak for any agent, and manager-agent traffic is not encrypted unless --tls-cert; " +
			"for dev and trusted networks only (see Agent identity in docs/OPERATIONS.md)")
	}
	if cfg.Events != "" {
		host, _ := os.Hostname()
		m.bus, err = events.OpenRedis(ctx, events.RedisConfig{URL: cfg.Events, Stream: cfg.EventsStream,
			Consumer: fmt.Sprintf("%s-%d-%d", host, os.Getpid(), time.Now().UnixNano()), Log: cfg.Log})
		if err != nil {
			st.Close()
			return nil, err
		}
		gw.UseBus(m.bus)
	}
	// The user API, when there is one, serves everything — the agent
	// gateway, health and metrics included — so one set of auth rules
	// applies; without it the manager serves only those three.
	var handler http.Handler
	if cfg.UserAPI != nil {
		if handler, err = cfg.UserAPI(m.Parts); err != nil {
			st.Close()
			return nil, err
		}
	} else {
		mux := http.NewServeMux()
		mux.Handle("/v1/agent/", gw)
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
		handler = mux
	}
	if m.ln, err = listen(cfg, m.identity); err != nil {
		st.Close()
		return nil, err
	}
	m.addr, m.tls = m.ln.Addr().String(), cfg.TLSCert != "" || m.identity != nil
	m.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	return m, nil
}

// URL is the manager's base URL: https:// when it serves TLS.
func (m *Manager) URL() string {
	if m.tls {
		return "https://" + m.addr
	}
	return "http://" + m.addr
}

// listen opens the manager's listener, a TLS one when cfg names a
// certificate or agents have identities (id not nil). With both, users
// get the operator's certificate and agents, which ask for
// pki.ClusterServerName, the manager's cluster-CA one.
func listen(cfg Config, id *identity) (net.Listener, error) {
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("manager: a TLS certificate and key go together: give both or neither")
	}
	var kp *keyPairFiles
	if cfg.TLSCert != "" {
		var err error
		if kp, err = openKeyPair(cfg.TLSCert, cfg.TLSKey, cfg.Log); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("manager: listen on %s: %w", cfg.Listen, err)
	}
	switch {
	case kp != nil && id != nil:
		ln = tls.NewListener(ln, pki.WithClusterCertificate(kp.tlsConfig(), id.ca, id.pair))
	case kp != nil:
		ln = tls.NewListener(ln, kp.tlsConfig())
	case id != nil:
		ln = tls.NewListener(ln, id.serverTLS())
	}
	return ln, nil
}

// Run serves and coordinates until ctx ends or one of its parts fails,
// then stops every part and shuts down in order; it returns the first
// part's failure, nil when ctx ended.
func (m *Manager) Run(ctx context.Context) error {
	// A failed part cancels gctx, which every other part runs under: a
	// manager that can no longer serve or coordinate must exit, not hang
	// half alive until a signal.
	g, gctx := errgroup.WithContext(ctx)
	// part runs one part; an error it returns once gctx has ended is the
	// noise of stopping, not a failure.
	part := func(run func(context.Context) error) {
		g.Go(func() error {
			if err := run(gctx); err != nil && gctx.Err() == nil {
				return err
			}
			return nil
		})
	}
	// Requests (event streams above all) end with gctx, so Shutdown does
	// not wait on streams that would never close.
	m.srv.BaseContext = func(net.Listener) context.Context { return gctx }
	if m.source != nil {
		base := m.cfg.Coordinator
		part(func(ctx context.Context) error {
			return m.source.Watch(ctx, func(s config.Settings) {
				m.Coordinator.Configure(apply(base, s))
				m.sampler.Configure(time.Duration(s.UtilisationInterval), time.Duration(s.UtilisationRetention))
			})
		})
	}
	if m.bus != nil {
		part(func(ctx context.Context) error { return m.bus.Run(ctx, m.gw.ApplyBatch) })
	}
	if m.identity != nil {
		part(func(ctx context.Context) error {
			m.identity.renewals(ctx)
			return nil
		})
		part(func(ctx context.Context) error {
			m.identity.watch(ctx, m.gw, m.Agents)
			return nil
		})
	}
	part(func(ctx context.Context) error {
		_ = m.sampler.Run(ctx) // logs its own failures; ends with ctx
		return nil
	})
	part(func(ctx context.Context) error {
		_ = m.Deploy.Run(ctx) // logs its own failures; ends with ctx
		return nil
	})
	part(func(context.Context) error {
		if err := m.srv.Serve(m.ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("manager: serve: %w", err)
		}
		return nil
	})
	part(m.Coordinator.Run)
	// The server does not watch a context: it is shut down once the
	// others are told to stop.
	g.Go(func() error {
		<-gctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = m.srv.Shutdown(shut)
		return nil
	})
	err := g.Wait()
	if m.bus != nil {
		m.bus.Close()
	}
	if m.lease != nil {
		m.lease.Close()
	}
	if m.etcd != nil {
		m.etcd.Close()
	}
	if cerr := m.Store.Close(); err == nil {
		err = cerr
	}
	return err
}

func openStore(ctx context.Context, dsn string, slots *domain.Registry) (store.Store, error) {
	switch {
	case isPostgres(dsn):
		st, err := postgres.Open(ctx, dsn, postgres.Options{Registry: slots})
		if err != nil {
			return nil, fmt.Errorf("manager: open PostgreSQL: %w", err)
		}
		return st, nil
	case dsn == "":
		return nil, errors.New("manager: a database is required (--db)")
	default:
		path := strings.TrimPrefix(dsn, "sqlite://")
		st, err := sqlite.Open(ctx, path, sqlite.Options{Registry: slots})
		if err != nil {
			return nil, fmt.Errorf("manager: open SQLite %s: %w", path, err)
		}
		return st, nil
	}
}

// ensureDefaultGroup creates the "default" resource group on first start.
func ensureDefaultGroup(ctx context.Context, st store.Store) error {
	_, err := st.GetResourceGroup(ctx, "default")
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("manager: read resource group: %w", err)
	}
	err = st.PutResourceGroup(ctx, domain.ResourceGroup{Name: "default", State: domain.GroupActive,
		Sequencer: scheduler.DefaultSequencer, Selector: scheduler.DefaultSelector,
		HeadOfLine: domain.DefaultHeadOfLine, ReservationDepth: domain.DefaultReservationDepth, MaxRetries: domain.DefaultMaxRetries, Timeouts: domain.DefaultTimeouts()})
	if err != nil {
		return fmt.Errorf("manager: create the default resource group: %w", err)
	}
	return nil
}

func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// openSource opens the shared-settings source named by spec.
func openSource(spec string, log *slog.Logger) (config.Source, *config.Etcd, error) {
	switch {
	case spec == "":
		return nil, nil, nil
	case strings.HasPrefix(spec, "etcd://"):
		rest := strings.TrimPrefix(spec, "etcd://")
		endpoints, key, _ := strings.Cut(rest, "/")
		if key != "" {
			key = "/" + key
		}
		e, err := config.OpenEtcd(endpoints, key, log)
		if err != nil {
			return nil, nil, err
		}
		return e, e, nil
	case strings.HasPrefix(spec, "file://"):
		return config.File{Path: strings.TrimPrefix(spec, "file://"), Log: log}, nil, nil
	}
	return nil, nil, fmt.Errorf("manager: --config %q: want etcd://host:port/key or file:///path", spec)
}

// apply lays shared settings over the flags the manager started with.
func apply(base coordinator.Config, s config.Settings) (coordinator.Config, coordinator.GroupDefaults) {
	set := func(d *time.Duration, v config.Duration) {
		if v > 0 {
			*d = time.Duration(v)
		}
	}
	set(&base.ShortInterval, s.CycleInterval)
	set(&base.LongInterval, s.SweepInterval)
	set(&base.CallTimeout, s.CallTimeout)
	set(&base.HeartbeatTimeout, s.HeartbeatTimeout)
	set(&base.LostGrace, s.LostGrace)
	set(&base.ChangeRetention, s.ChangeRetention)
	set(&base.JobStartingTimeout, s.JobStartingTimeout)
	set(&base.JobCompletingTimeout, s.JobCompletingTimeout)
	set(&base.JobRetention, s.JobRetention)
	set(&base.UsageRetention, s.UsageRetention)
	d := coordinator.GroupDefaults{MaxRetries: s.GroupDefaults.MaxRetries}
	t := s.GroupDefaults.Timeouts
	d.Timeouts = domain.Timeouts{Pending: time.Duration(t["pending"]), Scheduled: time.Duration(t["scheduled"]),
		Preparing: time.Duration(t["preparing"]), Prepared: time.Duration(t["prepared"]),
		Creating: time.Duration(t["creating"]), Terminating: time.Duration(t["terminating"])}
	return base, d
}
