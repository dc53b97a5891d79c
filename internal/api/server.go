package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/hook"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Store is what the API needs from persistence: groups, agents, jobs,
// users, policies and deployments whole, and the reads and writes of
// sessions, the scheduling snapshot, the feed and utilisation it serves;
// store/sqlite and store/postgres provide it.
type Store interface {
	store.Groups
	store.Agents
	store.Jobs
	store.Arrays
	store.Users
	store.Policies
	store.Deployments
	CreateJoinToken(ctx context.Context, t store.JoinToken, hash []byte) error
	RevokeAgentCertificates(ctx context.Context, agent domain.AgentID, at time.Time) (int, error)
	ClusterCA(ctx context.Context) (store.ClusterCA, error)
	RotateClusterCA(ctx context.Context, next store.ClusterCA, oldIssuer string, at time.Time) error
	StaleAgents(ctx context.Context, issuer string, now time.Time) ([]domain.AgentID, error)
	FinishCARotation(ctx context.Context, issuer string, now time.Time) error
	CreateSession(ctx context.Context, s domain.Session, kernels []domain.Kernel, limits ...store.PendingLimit) error
	GetSession(ctx context.Context, id domain.SessionID) (store.SessionWithKernels, error)
	ListSessions(ctx context.Context, f store.SessionFilter) ([]domain.Session, error)
	ListKernels(ctx context.Context, f store.KernelFilter) ([]domain.Kernel, error)
	History(ctx context.Context, id domain.SessionID) ([]domain.HistoryEntry, error)
	TouchSession(ctx context.Context, id domain.SessionID, at time.Time) error
	LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error)
	GroupGenerations(ctx context.Context) (map[string]int64, error)
	Changes(ctx context.Context, f store.ChangeFilter) ([]store.Change, error)
	LastChange(ctx context.Context) (int64, error)
	Utilisation(ctx context.Context, group string, from, to time.Time, step time.Duration) ([]store.UtilisationPoint, error)
	UsageHistory(ctx context.Context, f store.UsageFilter) ([]store.UsageRow, error)
}

// Sessions is the part of the coordinator the API drives;
// *coordinator.Coordinator provides it.
type Sessions interface {
	// Terminate ends a session at a user's request: PENDING is cancelled at
	// once, anything else live goes TERMINATING; force kills its kernels at
	// once, without the grace period.
	Terminate(ctx context.Context, id domain.SessionID, reason string, force bool) (store.SessionWithKernels, error)
	// TerminateAll ends many sessions as Terminate does, the PENDING ones
	// together; it returns how many it moved.
	TerminateAll(ctx context.Context, ids []domain.SessionID, reason string, force bool) (int, error)
	// Mark asks for a scheduling cycle soon.
	Mark()
	// DrainDue ends what still runs on agents whose drain deadline has
	// passed; the sweep calls it too, but a drain with deadline 0s asks
	// for it now, not at the next sweep.
	DrainDue(ctx context.Context) error
	// Bound is how long a session of the group may stay in the status
	// before the coordinator moves it on; 0 when unbounded.
	Bound(ctx context.Context, group string, status domain.SessionStatus) (time.Duration, error)
	// NewGroupTimeouts are the residence bounds a new resource group gets
	// for the ones its PUT leaves out.
	NewGroupTimeouts() domain.Timeouts
}

// Clock tells the time (package clock's); tests inject their own.
type Clock = clock.Clock

// LogsFunc opens the output of one kernel on its agent from byte offset
// on (0: from the start; past the end: nothing). The API checks that the
// caller may see the session; the reader is closed when the client goes
// away or the stream ends.
type LogsFunc func(ctx context.Context, agent domain.AgentID, kernel domain.KernelID, offset int64) (io.ReadCloser, error)

// Deps are what a Server is built from. Store, Sessions, Slots and Plugins
// are required; the rest may be nil (AgentRPC, Logs and Gatherer then
// answer 501, Ready always succeeds, Clock is the wall clock, Log discards).
type Deps struct {
	Store Store
	// ClusterCA is the cluster CA's certificate (PEM) when agents have
	// identities: a join token's answer carries it, for agents to trust
	// the managers with when they join.
	ClusterCA []byte
	// IdentityChanged, when set, is told of an `agent rm` or a CA
	// rotation served here, for the manager to act on it at once.
	IdentityChanged func(context.Context)
	Sessions        Sessions
	Slots           *domain.Registry
	Plugins         *scheduler.Registry
	// AgentRPC serves agents under /v1/agent/; it sees the full request
	// path. Only AgentToken opens it.
	AgentRPC   http.Handler
	AgentToken string
	Logs       LogsFunc
	Gatherer   prometheus.Gatherer
	// Registerer, when set, takes the API's request metrics.
	Registerer prometheus.Registerer
	Ready      func(ctx context.Context) error
	Clock      Clock
	Log        *slog.Logger
	// Estimate, when set, adds estimated_start to why (cached per group
	// for a few seconds).
	Estimate EstimateFunc
	// EstimateWith, when set, adds estimated_start to a dry run of apply
	// for the sessions it would create.
	EstimateWith EstimateWithFunc
	// Hooks are the session-type hooks; nil means hook.Standard().
	Hooks *hook.Registry
	// Deploy, when set, is woken after a user changes a deployment.
	Deploy Kicker
	// Admit admits sessions; nil builds one over Store, Slots, Hooks,
	// Clock and Sessions (its Mark) with the Config's defaults. A manager
	// passes the one its deployments submit routes through.
	Admit *admit.Admitter
}

// Config tunes the server. Zero fields take the defaults.
type Config struct {
	// MaxBodyBytes caps a request body (413 beyond); default 1 MiB.
	MaxBodyBytes int64
	// EventPoll is how often an event stream looks for new changes;
	// default 100 ms. EventHeartbeat is how often an idle stream sends a
	// comment so proxies keep it open; default 15 s.
	EventPoll      time.Duration
	EventHeartbeat time.Duration
	// MaxStreamsPerUser caps one user's open event streams; default 16.
	MaxStreamsPerUser int
	// DefaultGroup and DefaultArchitecture fill a session request that
	// names none; defaults "default" and "x86_64".
	DefaultGroup        string
	DefaultArchitecture string
	// MaxProxyPerUser and MaxProxyPerSession cap the session-proxy
	// connections one user, and one session, hold at once (default 64
	// each); MaxProxy caps all proxied connections together (default a
	// quarter of the descriptor limit, at least 256); ProxyIdleTimeout
	// closes a proxied connection on which nothing moved (default 1 h).
	MaxProxyPerUser, MaxProxyPerSession, MaxProxy int
	ProxyIdleTimeout                              time.Duration
	// MetricsToken, when set, opens the series that name users and
	// deployments on GET /metrics, as an admin's token does; without
	// either a scrape gets the rest (metrics.go).
	MetricsToken string
}

const (
	// maxListLimit caps one listing; defaultListLimit is used without one.
	maxListLimit     = 10_000
	defaultListLimit = 1_000
	// eventBatch caps the changes one poll of the change feed reads.
	eventBatch = 500
	// feedWindow is how many recent changes the shared feed keeps for
	// streams that fall a little behind.
	feedWindow = 10_000
)

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.EventPoll <= 0 {
		c.EventPoll = 100 * time.Millisecond
	}
	if c.EventHeartbeat <= 0 {
		c.EventHeartbeat = 15 * time.Second
	}
	if c.MaxStreamsPerUser <= 0 {
		c.MaxStreamsPerUser = 16
	}
	if c.DefaultGroup == "" {
		c.DefaultGroup = "default"
	}
	if c.DefaultArchitecture == "" {
		c.DefaultArchitecture = "x86_64"
	}
	return c
}

// Server is the HTTP API. It is an http.Handler; the caller owns the
// http.Server. Event streams end when their request's context does, so an
// http.Server whose BaseContext is cancelled before Shutdown stops them
// promptly.
type Server struct {
	cfg            Config
	proxies        *proxyLimits
	store          Store
	sessions       Sessions
	slots          *domain.Registry
	plugins        *scheduler.Registry
	sched          *scheduler.Scheduler
	agentRPC       http.Handler
	agentTokenHash []byte
	clusterCA      []byte
	// identityChanged is Deps.IdentityChanged.
	identityChanged func(context.Context)
	logs            LogsFunc
	gatherer        prometheus.Gatherer
	requests        *prometheus.CounterVec
	latency         *prometheus.HistogramVec
	ready           func(ctx context.Context) error
	clock           Clock
	log             *slog.Logger

	mux     *http.ServeMux
	routes  []route
	openapi []byte
	// applySchema is the apply file's JSON Schema, made from openapi's
	// components.
	applySchema []byte
	// feed is the change-feed reader the event streams share; streams
	// counts each user's open streams.
	feed      *feed
	streamsMu sync.Mutex
	streams   map[string]int
	// est caches each group's estimated starts for why; dry its dry runs
	// for why and the queue.
	est groupCache[map[domain.SessionID]time.Time]
	dry groupCache[dryRunResult]
	// estWith estimates with sessions not yet stored (apply's dry run);
	// never cached, as its input is one request's.
	estWith EstimateWithFunc
	hooks   *hook.Registry
	admit   *admit.Admitter
	// act rate-limits the recording of session activity.
	act activity
	// deploy is the deployment controller, woken after user changes.
	deploy Kicker
	// traffic is the deployments' proxy state.
	traffic traffic
	// proxyCache spares proxied requests their auth and deployment reads.
	proxyCache proxyCache
}

// New builds the server and its routes.
func New(cfg Config, d Deps) *Server {
	d.Clock = clock.Or(d.Clock)
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Hooks == nil {
		d.Hooks = hook.Standard()
	}
	s := &Server{
		cfg: cfg.withDefaults(), store: d.Store, sessions: d.Sessions, slots: d.Slots, plugins: d.Plugins,
		sched: scheduler.New(d.Plugins), agentRPC: d.AgentRPC, logs: d.Logs, gatherer: d.Gatherer,
		ready: d.Ready, clock: d.Clock, log: d.Log, mux: http.NewServeMux(), streams: map[string]int{},
		hooks: d.Hooks, act: activity{last: map[domain.SessionID]time.Time{}},
		deploy: d.Deploy, admit: d.Admit, proxies: newProxyLimits(cfg), estWith: d.EstimateWith,
	}
	if s.admit == nil {
		s.admit = s.ownAdmitter()
	}
	now := func() time.Time { return s.clock.Now() }
	if d.Estimate != nil {
		s.est = groupCache[map[domain.SessionID]time.Time]{now: now, ttl: estimateFresh, maxStale: estimateStale,
			timeout: estimateTimeout, compute: d.Estimate}
	}
	s.dry = groupCache[dryRunResult]{now: now, ttl: dryRunFresh, timeout: dryRunTimeout, compute: s.computeDryRun}
	polls := func() {}
	if d.AgentToken != "" {
		s.agentTokenHash = HashToken(d.AgentToken)
	}
	s.clusterCA, s.identityChanged = d.ClusterCA, d.IdentityChanged
	if d.Registerer != nil {
		// Labelled by route pattern, not path, so ids do not make series.
		s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_api_requests_total",
			Help: "API requests by route and status code."}, []string{"route", "code"})
		s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sokovan_api_request_duration_seconds",
			Help:    "API request duration by route; event streams are left out (they last as long as the client).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}, []string{"route"})
		feedPolls := prometheus.NewCounter(prometheus.CounterOpts{Name: "sokovan_api_feed_polls_total",
			Help: "Reads of the change feed by the reader the event streams share."})
		d.Registerer.MustRegister(s.requests, s.latency, feedPolls)
		s.traffic.metrics = newProxyMetrics(d.Registerer)
		polls = feedPolls.Inc
	}
	s.feed = newFeed(d.Store, s.cfg.EventPoll, feedWindow, polls)
	s.routes = s.table()
	for _, rt := range s.routes {
		s.mux.Handle(rt.pattern(), s.wrap(rt))
	}
	s.openapi = s.document()
	s.applySchema = s.applySchemaDocument()
	return s
}

// ownAdmitter admits over the server's own store, hooks and clock, with
// its Config's defaults, for a server given no admitter.
func (s *Server) ownAdmitter() *admit.Admitter {
	return admit.New(admit.Deps{Store: s.store, Slots: s.slots, Hooks: s.hooks, Clock: s.clock, Marker: s.sessions},
		admit.Config{DefaultGroup: s.cfg.DefaultGroup, DefaultArchitecture: s.cfg.DefaultArchitecture})
}

// ServeHTTP routes the request. Requests no route takes get the same JSON
// error shape as every other failure, not the mux's plain text.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	// Let the mux decide between 404, 405 (with Allow) and a redirect to
	// the cleaned path, and answer in JSON where it would answer in text.
	rec := &recorder{header: http.Header{}}
	s.mux.ServeHTTP(rec, r)
	switch rec.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.header.Get("Allow"))
		s.fail(w, r, &apiError{Status: http.StatusMethodNotAllowed, Code: codeMethod,
			Message: fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)})
	case http.StatusNotFound, 0:
		s.fail(w, r, notFound("no route for %s %s", r.Method, r.URL.Path))
	default:
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
	}
}

// recorder captures what the mux would answer to an unrouted request.
type recorder struct {
	header http.Header
	status int
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(b), nil
}

// handlerFunc is a route's handler: it writes a success itself and
// returns failures, which wrap writes as JSON errors.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// wrap adds, outside in: panic recovery, the access log, authorisation and
// the body limit.
func (s *Server) wrap(rt route) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.access != agent && !rt.passBody {
			// The agent RPC sets its own limits; everything else is small.
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		}
		if err := rt.handle(w, r); err != nil {
			s.fail(w, r, err)
		}
	})
	h := s.authorize(rt.access, inner)
	if rt.proxyCookie {
		h = cookieBearer(h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "handler panicked", "route", rt.pattern(), "panic", p,
					"stack", string(debug.Stack()))
				if sw.status == 0 {
					s.fail(sw, r, fmt.Errorf("panic: %v", p))
				}
			}
			level := slog.LevelInfo
			if rt.access == public || rt.access == agent {
				level = slog.LevelDebug // probes and agents would drown the log
			}
			s.log.Log(r.Context(), level, "http", "method", r.Method, "route", rt.pattern(), "path", r.URL.Path,
				"status", sw.code(), "duration", time.Since(start))
			if s.requests != nil {
				s.requests.WithLabelValues(rt.pattern(), strconv.Itoa(sw.code())).Inc()
				if !rt.stream {
					s.latency.WithLabelValues(rt.pattern()).Observe(time.Since(start).Seconds())
				}
			}
		}()
		h.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status for the access log. Unwrap lets
// http.ResponseController reach the connection's Flush and deadlines.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
