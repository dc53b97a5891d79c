package deploy

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Store is what the controller reads and writes.
type Store interface {
	ListDeployments(ctx context.Context, f store.DeploymentFilter) ([]domain.Deployment, error)
	// The controller never writes a whole deployment: a user's update
	// may land between its read and its write, and each of these writes
	// only what the controller owns.
	store.DeploymentControl
	CreateRoute(ctx context.Context, r domain.Route) error
	ListRoutes(ctx context.Context, f store.RouteFilter) ([]domain.Route, error)
	UpdateRoute(ctx context.Context, r domain.Route, from []domain.RouteStatus) error
	AppendDeploymentHistory(ctx context.Context, entries []domain.DeploymentHistoryEntry) error
	// ListAgentDrains and ListKernels find the routes whose sessions run
	// on a draining agent, to move them before the drain's deadline.
	ListAgentDrains(ctx context.Context) ([]domain.AgentDrain, error)
	ListKernels(ctx context.Context, f store.KernelFilter) ([]domain.Kernel, error)
	GetSession(ctx context.Context, id domain.SessionID) (store.SessionWithKernels, error)
	ReportDeploymentLoad(ctx context.Context, manager string, load map[domain.DeploymentID]float64, at time.Time) error
	DeploymentLoad(ctx context.Context, since time.Time) (map[domain.DeploymentID]float64, error)
	AgentGetter
}

// LoadSource is this manager's proxy: the average requests in flight per
// deployment since it was last asked.
type LoadSource interface {
	TakeLoad() map[domain.DeploymentID]float64
}

// Admitter admits routes' sessions exactly as users' sessions are
// admitted (*admit.Admitter): the same checks, defaults and limits.
type Admitter interface {
	Admit(ctx context.Context, req admit.Request) (domain.Session, error)
}

// Sessions ends routes' sessions the way a user's DELETE does
// (*coordinator.Coordinator): cancelled if PENDING, TERMINATING
// otherwise.
type Sessions interface {
	Terminate(ctx context.Context, id domain.SessionID, reason string, force bool) (store.SessionWithKernels, error)
}

// Lease says whether this manager may act now (coordinator.Lease).
type Lease interface {
	Held(ctx context.Context) bool
}

// Clock tells the time (package clock's).
type Clock = clock.Clock

// Config bounds the controller's work. Zero fields take the defaults.
type Config struct {
	// Interval is how often the controller passes over every deployment.
	Interval time.Duration
	// ProvisionTimeout bounds PROVISIONING: a route whose session is not
	// serving by then failed to start.
	ProvisionTimeout time.Duration
	// EvictionGrace is how long a route may stay UNHEALTHY, and recover,
	// before it is evicted.
	EvictionGrace time.Duration
	// TerminateTimeout bounds TERMINATING; the session's own TERMINATING
	// bound releases its resources.
	TerminateTimeout time.Duration
	// DestroyTimeout bounds DESTROYING.
	DestroyTimeout time.Duration
	// DrainGrace is how long a serving route that is ended (scale-in,
	// rollout, destroy) stays TERMINATING, out of every manager's proxy
	// table, before its session is ended, so requests in flight finish.
	// It must exceed the proxy's discovery refresh (250 ms).
	DrainGrace time.Duration
	// BackoffBase and BackoffMax shape the wait after a route fails to
	// start: base·2^(n-1) after the nth failure in a row, at most max.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxConcurrentChecks bounds the health checks in flight.
	MaxConcurrentChecks int
	// MissingSessionGrace is how long a PROVISIONING route may name a
	// session the store does not have before it failed to start: a
	// manager that crashed between writing the route and submitting its
	// session leaves such a route.
	MissingSessionGrace time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Interval, 500*time.Millisecond)
	def(&c.ProvisionTimeout, 10*time.Minute)
	def(&c.EvictionGrace, 30*time.Second)
	def(&c.TerminateTimeout, 5*time.Minute)
	def(&c.DestroyTimeout, 10*time.Minute)
	def(&c.DrainGrace, 2*time.Second)
	def(&c.BackoffBase, 5*time.Second)
	def(&c.BackoffMax, 5*time.Minute)
	def(&c.MissingSessionGrace, 10*time.Second)
	if c.MaxConcurrentChecks <= 0 {
		c.MaxConcurrentChecks = 32
	}
	return c
}

// Backoff is how long to wait before the next route after failures
// routes failed to start in a row.
func (c Config) Backoff(failures int) time.Duration {
	c = c.withDefaults()
	if failures <= 0 {
		return 0
	}
	d := c.BackoffBase
	for i := 1; i < failures && d < c.BackoffMax; i++ {
		d *= 2
	}
	return min(d, c.BackoffMax)
}

// Deps are the controller's collaborators. Admit and Sessions are what
// routes start and end through; without them no route starts. Lease nil:
// a manager alone. Clock nil: the wall clock. Registerer nil: no metrics.
type Deps struct {
	Store      Store
	Admit      Admitter
	Sessions   Sessions
	Lease      Lease
	Clock      Clock
	Log        *slog.Logger
	Registerer prometheus.Registerer
}

// Controller drives deployments and routes through seed 001's tables.
type Controller struct {
	store    Store
	admit    Admitter
	sessions Sessions
	lease    Lease
	clock    Clock
	log      *slog.Logger
	cfg      Config
	limits   routeLimits
	client   *http.Client
	metrics  *metrics
	kick     chan struct{}

	// id names this manager's load reports.
	id string

	mu   sync.Mutex
	load LoadSource
}

// New returns a controller.
func New(d Deps, cfg Config) *Controller {
	d.Clock = clock.Or(d.Clock)
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	c := &Controller{store: d.Store, admit: d.Admit, sessions: d.Sessions, lease: d.Lease, clock: d.Clock, log: d.Log,
		cfg: cfg.withDefaults(), limits: cfg.withDefaults().limits(), kick: make(chan struct{}, 1), metrics: newMetrics(d.Registerer), id: newID(),
		// Health checks never follow redirects: a route answers for itself.
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	return c
}

// UseLoad gives the controller this manager's proxy load, which it
// reports on every pass, lease or not, so the one that acts sees every
// manager's traffic.
func (c *Controller) UseLoad(l LoadSource) {
	c.mu.Lock()
	c.load = l
	c.mu.Unlock()
}

func (c *Controller) loadSource() LoadSource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.load
}

// report writes this manager's proxy load since the previous report.
func (c *Controller) report(ctx context.Context) error {
	l := c.loadSource()
	if l == nil {
		return nil
	}
	load := l.TakeLoad()
	if len(load) == 0 {
		return nil
	}
	return c.store.ReportDeploymentLoad(ctx, c.id, load, c.clock.Now())
}

// Kick asks for a pass soon, as after a user's change.
func (c *Controller) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run passes over the deployments every interval until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		if err := c.report(ctx); err != nil && ctx.Err() == nil {
			c.log.WarnContext(ctx, "deploy: report load", "err", err)
		}
		if c.lease == nil || c.lease.Held(ctx) {
			if err := c.Step(ctx); err != nil && ctx.Err() == nil {
				c.log.WarnContext(ctx, "deploy: pass failed", "err", err)
			}
		} else {
			// Only the acting manager's gauges describe the routes; one
			// that lost the lease drops its own rather than keep stale ones.
			c.metrics.routes(nil, nil)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-c.kick:
		}
	}
}

// liveDeployments are the statuses the controller works on.
var liveDeployments = []domain.DeploymentStatus{domain.DeploymentPending, domain.DeploymentCreated,
	domain.DeploymentScaling, domain.DeploymentReady, domain.DeploymentDeploying, domain.DeploymentDestroying}

// Step makes one pass: every route, then every deployment.
func (c *Controller) Step(ctx context.Context) error {
	deps, err := c.store.ListDeployments(ctx, store.DeploymentFilter{Statuses: liveDeployments})
	if err != nil {
		return err
	}
	if len(deps) == 0 {
		c.metrics.routes(nil, nil)
		return nil
	}
	ids := make([]domain.DeploymentID, len(deps))
	for i, d := range deps {
		ids[i] = d.ID
	}
	var notDone []domain.RouteStatus
	for _, s := range domain.RouteStatuses() {
		if !s.Terminal() {
			notDone = append(notDone, s)
		}
	}
	all, err := c.store.ListRoutes(ctx, store.RouteFilter{Deployments: ids, Statuses: notDone})
	if err != nil {
		return err
	}
	byDep := map[domain.DeploymentID][]*domain.Route{}
	for i := range all {
		byDep[all[i].Deployment] = append(byDep[all[i].Deployment], &all[i])
	}
	now := c.clock.Now().UTC().Truncate(time.Microsecond)
	draining, err := c.drainingSessions(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for i := range deps {
		d := &deps[i]
		for _, r := range byDep[d.ID] {
			errs = append(errs, c.route(ctx, d, r, now))
		}
	}
	errs = append(errs, c.checkAll(ctx, deps, byDep, now))
	errs = append(errs, c.autoscaleAll(ctx, deps, byDep, now))
	for i := range deps {
		errs = append(errs, c.deployment(ctx, &deps[i], byDep[deps[i].ID], draining, now))
	}
	c.metrics.routes(deps, byDep)
	return errors.Join(errs...)
}

func (c *Controller) sessionReason(ctx context.Context, r *domain.Route) string {
	sk, err := c.store.GetSession(ctx, r.Session)
	if err != nil || sk.Session.StatusReason == "" {
		return ""
	}
	return ": " + sk.Session.StatusReason
}

// endpoint is where route r's session serves its health-checked port.
func (c *Controller) endpoint(ctx context.Context, d *domain.Deployment, r *domain.Route) (string, error) {
	sk, err := c.store.GetSession(ctx, r.Session)
	if err != nil {
		return "", err
	}
	for _, k := range sk.Kernels {
		if k.ClusterRole == domain.RoleMain || len(sk.Kernels) == 1 {
			return Endpoint(ctx, c.store, k, d.Health.Port)
		}
	}
	return "", fmt.Errorf("%w: session %s has no main kernel", ErrUnreachable, r.Session)
}

// failStart records that r failed to start, ends its session, and backs
// the deployment off before the next route.
func (c *Controller) failStart(ctx context.Context, d *domain.Deployment, r *domain.Route, now time.Time, why string) error {
	from := r.Status
	if err := c.moveRoute(ctx, d, r, domain.HandlerProvisioningRoute, domain.RouteFailure, now, why); err != nil {
		return err
	}
	if r.Status == from {
		return nil // moved by another pass, which counted it
	}
	// A route of an earlier revision failing says nothing of the
	// current spec (see endUnserved).
	if r.Revision == d.Revision {
		if err := c.backOff(ctx, d, now); err != nil {
			return err
		}
	}
	return c.endSession(ctx, r, "route failed to start: "+why)
}

// endUnserved applies end, a move that takes live route r out, and backs
// the deployment off if r never served: a session that comes up and dies
// before passing its checks failed to start as surely as one that never
// came up, and replacing it at once would loop hot. One that served
// proved the spec: its end is no failed start (the count was reset when
// it became HEALTHY). Neither is the end of a route of an earlier
// revision: a rollout reads failed starts as failures of the new spec.
func (c *Controller) endUnserved(ctx context.Context, d *domain.Deployment, r *domain.Route, now time.Time, end func() error) error {
	from := r.Status
	if err := end(); err != nil {
		return err
	}
	if r.Served || r.Status == from || r.Revision != d.Revision {
		return nil // served, moved by another pass, or an old spec's
	}
	return c.backOff(ctx, d, now)
}

// backOff counts one more failed start of d and delays its next route.
// The count is the store's, not this pass's copy plus one, and only the
// backoff is taken from the row written back: d keeps the rest as this
// pass read it, which its handlers go on from.
func (c *Controller) backOff(ctx context.Context, d *domain.Deployment, now time.Time) error {
	got, err := c.store.CountStartFailure(ctx, d.ID, d.Revision, now, c.cfg.Backoff)
	if errors.Is(err, store.ErrGuardFailed) {
		return nil // a user's new revision meanwhile: this failure was the old spec's
	}
	if err != nil {
		return fmt.Errorf("back off deployment %s: %w", d.ID, err)
	}
	d.StartFailures, d.NextStartAt = got.StartFailures, got.NextStartAt
	return nil
}

func (c *Controller) endSession(ctx context.Context, r *domain.Route, reason string) error {
	if r.SessionStatus == 0 || r.SessionStatus.Terminal() || r.SessionStatus == domain.SessionTerminating {
		return nil
	}
	if c.sessions == nil {
		return errors.New("deploy: no session port")
	}
	if err := c.endRoute(ctx, r.Session, reason); err != nil {
		return fmt.Errorf("end session %s of route %s: %w", r.Session, r.ID, err)
	}
	return nil
}

// endRoute ends a route's session as a user's DELETE does; one already
// gone or ended is no error.
func (c *Controller) endRoute(ctx context.Context, id domain.SessionID, reason string) error {
	// Terminate reads the session itself and leaves an ended one be.
	if _, err := c.sessions.Terminate(ctx, id, reason, false); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// moveRoute applies handler's outcome to r, guarded by r's status, and
// records it. A route another pass moved first is left alone.
func (c *Controller) moveRoute(ctx context.Context, d *domain.Deployment, r *domain.Route, h domain.HandlerName,
	res domain.RouteResult, now time.Time, msg string) error {
	row, _ := domain.RouteHandlerByName(h)
	to := row.For(res)
	from := r.Status
	next := *r
	if to != 0 && to != from {
		next.Status, next.StatusChangedAt, next.StatusReason = to, now, msg
		if to == domain.RouteDegraded {
			next.Successes, next.Failures = 0, 0
		}
	}
	if err := c.store.UpdateRoute(ctx, next, []domain.RouteStatus{from}); err != nil {
		if errors.Is(err, store.ErrGuardFailed) {
			return nil
		}
		return fmt.Errorf("route %s: %w", r.ID, err)
	}
	*r = next
	return c.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, Route: r.ID, At: now,
		Cause: h, Result: res, From: from.String(), To: r.Status.String(), Message: msg}})
}

// moveDeployment applies handler's outcome to d and records it.
func (c *Controller) moveDeployment(ctx context.Context, d *domain.Deployment, h domain.HandlerName,
	res domain.RouteResult, now time.Time, msg string) error {
	row, _ := domain.DeploymentHandlerByName(h)
	to := row.For(res)
	return c.recordMove(ctx, d, h, res, to, now, msg, func() error {
		return c.store.MoveDeployment(ctx, d.ID, []domain.DeploymentStatus{d.Status}, to, now)
	})
}

// recordMove makes a deployment move to with write, if it is one, and
// records the outcome. A deployment another pass moved first is left
// alone, unrecorded.
func (c *Controller) recordMove(ctx context.Context, d *domain.Deployment, h domain.HandlerName,
	res domain.RouteResult, to domain.DeploymentStatus, now time.Time, msg string, write func() error) error {
	from := d.Status
	if to != 0 && to != from {
		if err := write(); err != nil {
			if errors.Is(err, store.ErrGuardFailed) {
				return nil
			}
			return fmt.Errorf("deployment %s: %w", d.ID, err)
		}
		d.Status, d.StatusChangedAt = to, now
	}
	return c.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, At: now,
		Cause: h, Result: res, From: from.String(), To: d.Status.String(), Message: msg}})
}

// deployment runs the deployment handlers on d, whose routes' moves of
// this pass are already applied.
func (c *Controller) deployment(ctx context.Context, d *domain.Deployment, routes []*domain.Route,
	draining map[domain.SessionID]domain.AgentID, now time.Time) error {
	var live []*domain.Route
	for _, r := range routes {
		if r.Status.Live() {
			live = append(live, r)
		}
	}
	// Routes on draining agents count as gone to the handlers below, so
	// replacements start elsewhere while they still serve; they end once
	// the replacements serve (replaceDrained). A rollout replaces routes
	// anyway and goes on as it is.
	var moving []*domain.Route
	if d.Status != domain.DeploymentDeploying && d.Status != domain.DeploymentDestroying {
		live, moving = splitDraining(live, draining)
	}
	healthy := 0
	for _, r := range live {
		if r.Status == domain.RouteHealthy {
			healthy++
		}
	}
	if err := c.replaceDrained(ctx, d, moving, healthy, draining, now); err != nil {
		return err
	}
	switch d.Status {
	case domain.DeploymentDestroying:
		return c.destroy(ctx, d, routes, now)
	case domain.DeploymentPending, domain.DeploymentCreated, domain.DeploymentReady, domain.DeploymentScaling:
		return c.applyScaling(ctx, d, decideScaling(*d, live, healthy, now), now)
	case domain.DeploymentDeploying:
		return c.rollout(ctx, d, live, now)
	}
	return nil
}

// scalingOrder sorts routes to end first: not yet serving, then by
// health (UNHEALTHY, DEGRADED, HEALTHY), then the oldest.
func scalingOrder(a, b *domain.Route) int {
	rank := func(s domain.RouteStatus) int {
		switch s {
		case domain.RouteProvisioning:
			return 0
		case domain.RouteUnhealthy:
			return 1
		case domain.RouteDegraded:
			return 2
		}
		return 3
	}
	return cmp.Or(cmp.Compare(rank(a.Status), rank(b.Status)), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
}

// moveRouteTo sends a live route to TERMINATING on a deployment
// handler's behalf (scale-in, rollout, destroy). Its session is ended
// after the drain grace, once no proxy sends it anything new.
func (c *Controller) moveRouteTo(ctx context.Context, d *domain.Deployment, r *domain.Route, h domain.HandlerName,
	now time.Time, msg string) error {
	from := r.Status
	if !domain.RouteEndAllowed(h, from) {
		return fmt.Errorf("route %s: %s does not end a %s route", r.ID, h, from)
	}
	next := *r
	next.Status, next.StatusChangedAt, next.StatusReason = domain.RouteTerminating, now, msg
	if err := c.store.UpdateRoute(ctx, next, []domain.RouteStatus{from}); err != nil {
		if errors.Is(err, store.ErrGuardFailed) {
			return nil
		}
		return fmt.Errorf("route %s: %w", r.ID, err)
	}
	*r = next
	if err := c.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, Route: r.ID, At: now,
		Cause: h, Result: domain.RouteSuccess, From: from.String(), To: r.Status.String(), Message: msg}}); err != nil {
		return err
	}
	if from == domain.RouteProvisioning {
		return c.endSession(ctx, r, msg) // it serves nothing yet: no drain
	}
	return nil
}

// startRoute creates one route and then its session, in that order: a
// crash between leaves a route naming a missing session, which
// ProvisioningRoute fails, never a session no route owns.
func (c *Controller) startRoute(ctx context.Context, d *domain.Deployment, now time.Time) error {
	if c.admit == nil {
		return errors.New("deploy: no session port; routes cannot start")
	}
	r := domain.Route{ID: domain.RouteID(newID()), Deployment: d.ID, Session: domain.SessionID(newID()),
		Status: domain.RouteProvisioning, StatusChangedAt: now, CreatedAt: now, StatusReason: "session submitted",
		Revision: d.Revision}
	if err := c.store.CreateRoute(ctx, r); err != nil {
		return fmt.Errorf("create route of %s: %w", d.ID, err)
	}
	if err := c.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, Route: r.ID, At: now,
		Cause: domain.HandlerScalingDeployment, Result: domain.RouteSuccess, To: r.Status.String(),
		Message: "route created with session " + string(r.Session)}}); err != nil {
		return err
	}
	name := fmt.Sprintf("%s-%s", d.Name, r.ID[:8])
	if _, err := c.admit.Admit(ctx, admit.Route(r.Session, d.Owner, name, d.Spec)); err != nil {
		return c.failStart(ctx, d, &r, now, "session refused: "+err.Error())
	}
	return nil
}

// destroy is DestroyingDeployment: every route ends, then the deployment
// is DESTROYED; past its bound it is DESTROYED anyway (the sessions' own
// bounds end what is left).
func (c *Controller) destroy(ctx context.Context, d *domain.Deployment, routes []*domain.Route, now time.Time) error {
	left := 0
	for _, r := range routes {
		switch r.Status {
		case domain.RouteTerminated:
		case domain.RouteTerminating:
			left++
		default:
			left++
			if err := c.moveRouteTo(ctx, d, r, domain.HandlerDestroyingDeployment, now, "deployment destroyed"); err != nil {
				return err
			}
		}
	}
	if left == 0 {
		return c.moveDeployment(ctx, d, domain.HandlerDestroyingDeployment, domain.RouteSuccess, now, "every route ended")
	}
	if now.Sub(d.StatusChangedAt) > c.cfg.DestroyTimeout {
		for _, r := range routes {
			if r.Status == domain.RouteTerminating {
				if err := c.moveRoute(ctx, d, r, domain.HandlerTerminatingRoute, domain.RouteSuccess, now,
					"deployment destroyed past its bound"); err != nil {
					return err
				}
			}
		}
		return c.moveDeployment(ctx, d, domain.HandlerDestroyingDeployment, domain.RouteFailure, now,
			fmt.Sprintf("%d routes still ending after %s", left, c.cfg.DestroyTimeout))
	}
	return nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
