package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/hook"
	"github.com/sokovan-go/sokovan/internal/scheduler"
)

// Config tunes the coordinator's timers. Zero fields take the defaults.
type Config struct {
	// ShortInterval runs every handler; LongInterval runs the sweeps
	// (agent loss).
	ShortInterval time.Duration
	LongInterval  time.Duration
	// CallTimeout bounds one agent call.
	CallTimeout time.Duration
	// HeartbeatTimeout marks a silent agent LOST; after LostGrace more its
	// kernels are given up.
	HeartbeatTimeout time.Duration
	LostGrace        time.Duration
	// BatchSize caps the sessions one handler run loads.
	BatchSize int
	// ChangeRetention is how long the change feed (GET /v1/events) keeps a
	// change; an event stream resumed from further back misses the rest.
	ChangeRetention time.Duration
	// Jobs: how long a job stays STARTING with one allocation, COMPLETING
	// before COMPLETED, and COMPLETED before it expires (seed 003).
	JobStartingTimeout   time.Duration
	JobCompletingTimeout time.Duration
	JobRetention         time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ShortInterval, time.Second)
	def(&c.LongInterval, 30*time.Second)
	def(&c.CallTimeout, 30*time.Second)
	def(&c.HeartbeatTimeout, 30*time.Second)
	def(&c.LostGrace, 30*time.Second)
	def(&c.ChangeRetention, 24*time.Hour)
	def(&c.JobStartingTimeout, domain.DefaultJobStartingTimeout)
	def(&c.JobCompletingTimeout, domain.DefaultJobCompletingTimeout)
	def(&c.JobRetention, domain.DefaultJobRetention)
	if c.BatchSize <= 0 {
		c.BatchSize = 10_000
	}
	return c
}

// Coordinator drives sessions through their lifecycle.
type Coordinator struct {
	store  Store
	agents Agents
	sched  *scheduler.Scheduler
	slots  *domain.Registry
	clock  Clock
	// cfg and defaults change live (Configure); handlers read them through
	// conf and groups.
	cfg      atomic.Pointer[Config]
	defaults atomic.Pointer[GroupDefaults]
	reconf   chan struct{}
	log      *slog.Logger
	metrics  *Metrics
	marks    chan struct{}
	lease    Lease
	idle     idleRounds
	touched  touched
	hooks    *hook.Registry
}

// Deps are what a coordinator is built from. Metrics and Log may be nil.
type Deps struct {
	Store     Store
	Agents    Agents
	Scheduler *scheduler.Scheduler
	Slots     *domain.Registry
	Clock     Clock
	Metrics   *Metrics
	Log       *slog.Logger
	// Lease, when set, gates Run's cycles and sweeps; nil means alone.
	Lease Lease
	// Hooks are the session-type hooks; nil means hook.Standard().
	Hooks *hook.Registry
}

// New returns a coordinator; Run drives it, or tests call Cycle and Sweep.
func New(d Deps, cfg Config) *Coordinator {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics(nil)
	}
	if d.Lease == nil {
		d.Lease = alwaysHeld{}
	}
	if d.Hooks == nil {
		d.Hooks = hook.Standard()
	}
	c := &Coordinator{store: d.Store, agents: d.Agents, sched: d.Scheduler, slots: d.Slots, clock: d.Clock,
		log: d.Log, metrics: d.Metrics, marks: make(chan struct{}, 1), lease: d.Lease, reconf: make(chan struct{}, 1),
		hooks: d.Hooks}
	full := cfg.withDefaults()
	c.cfg.Store(&full)
	c.defaults.Store(&GroupDefaults{})
	return c
}

// Configure changes timers and group defaults while running; zero fields
// of cfg take the built-in defaults. A running loop resets its tickers.
func (c *Coordinator) Configure(cfg Config, d GroupDefaults) {
	full := cfg.withDefaults()
	c.cfg.Store(&full)
	c.defaults.Store(&d)
	c.idle.reconfigured()
	select {
	case c.reconf <- struct{}{}:
	default:
	}
}

// Config returns the settings in force.
func (c *Coordinator) Config() Config { return *c.conf() }

func (c *Coordinator) conf() *Config { return c.cfg.Load() }

// Mark asks for a cycle soon. Marks coalesce: many in a burst give one
// cycle, so an event storm costs what one event does.
func (c *Coordinator) Mark() {
	select {
	case c.marks <- struct{}{}:
	default:
	}
}

// Run drives the coordinator until ctx ends: a cycle on every mark and
// every short tick, a sweep every long tick — each only while this manager
// holds the lease.
func (c *Coordinator) Run(ctx context.Context) error {
	cfg := c.conf()
	short := time.NewTicker(cfg.ShortInterval)
	defer short.Stop()
	long := time.NewTicker(cfg.LongInterval)
	defer long.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-c.reconf:
			cfg = c.conf()
			short.Reset(cfg.ShortInterval)
			long.Reset(cfg.LongInterval)
		case <-c.marks:
			if c.lease.Held(ctx) {
				err = c.Cycle(ctx)
			}
		case <-short.C:
			if c.lease.Held(ctx) {
				err = c.Cycle(ctx)
			}
		case <-long.C:
			if c.lease.Held(ctx) {
				err = c.Sweep(ctx)
			}
		}
		if err != nil && ctx.Err() == nil {
			c.log.Error("coordinator", "err", err)
		}
	}
}

// Cycle runs every handler once, in lifecycle order, so a session with
// instant agents can go from PENDING to CREATING in one cycle. A handler's
// error does not stop the others; they are joined.
func (c *Coordinator) Cycle(ctx context.Context) error {
	p := promotions()
	steps := []func(context.Context) error{
		func(ctx context.Context) error { return c.Promote(ctx, p[domain.HandlerDetectTermination]) },
		c.TerminateSessions,
		func(ctx context.Context) error { return c.Promote(ctx, p[domain.HandlerPromoteToTerminated]) },
		c.ScheduleNewSessions,
		c.PrepareSessions,
		func(ctx context.Context) error { return c.Promote(ctx, p[domain.HandlerPromoteToPrepared]) },
		c.StartSessions,
		func(ctx context.Context) error { return c.Promote(ctx, p[domain.HandlerPromoteToRunning]) },
		c.ReconcileJobs,
	}
	var errs []error
	for _, step := range steps {
		if err := step(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func promotions() map[domain.HandlerName]domain.PromotionHandler {
	m := make(map[domain.HandlerName]domain.PromotionHandler)
	for _, p := range domain.PromotionHandlers() {
		m[p.Name] = p
	}
	return m
}
