package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sokovan-go/sokovan/internal/clock"
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
	// CallTimeout bounds one agent call; an agent that lets one run out
	// is isolated until it answers a probe (calls.go).
	CallTimeout time.Duration
	// CallWait is how long a handler waits for its agent calls before it
	// goes on and leaves the slower ones to finish, and their results to
	// be recorded, on their own (default 250ms). Negative: every call is
	// made in turn and waited for, as the simulator needs for a
	// repeatable run.
	CallWait time.Duration
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
	// UsageRetention is how long the hourly accounting history (sokovan
	// usage, the fair-share sequencer) keeps an hour (default 90 days).
	UsageRetention time.Duration
}

// DefaultUsageRetention keeps a quarter of accounting history, far past
// the default fair-share half-life (a week) and a month's report.
const DefaultUsageRetention = 90 * 24 * time.Hour

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ShortInterval, time.Second)
	def(&c.LongInterval, 30*time.Second)
	def(&c.CallTimeout, 30*time.Second)
	if c.CallWait == 0 {
		c.CallWait = 250 * time.Millisecond
	}
	def(&c.HeartbeatTimeout, 30*time.Second)
	def(&c.LostGrace, 30*time.Second)
	def(&c.ChangeRetention, 24*time.Hour)
	def(&c.JobStartingTimeout, domain.DefaultJobStartingTimeout)
	def(&c.JobCompletingTimeout, domain.DefaultJobCompletingTimeout)
	def(&c.JobRetention, domain.DefaultJobRetention)
	def(&c.UsageRetention, DefaultUsageRetention)
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
	calls    *agentCalls
	// dueStale says the store's next due time (time limits, idle
	// timeouts, drain deadlines) may have moved earlier since Run last
	// read it: a session started running, a group or agent changed.
	dueStale atomic.Bool
	gens     atomic.Int64
}

// Deps are what a coordinator is built from. Metrics and Log may be nil.
type Deps struct {
	Store     Store
	Agents    Agents
	Scheduler *scheduler.Scheduler
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
	d.Clock = clock.Or(d.Clock)
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
	c := &Coordinator{store: d.Store, agents: d.Agents, sched: d.Scheduler, clock: d.Clock,
		log: d.Log, metrics: d.Metrics, marks: make(chan struct{}, 1), lease: d.Lease, reconf: make(chan struct{}, 1),
		hooks: d.Hooks, calls: newAgentCalls()}
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
	c.dueStale.Store(true)
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
// every short tick, a sweep every long tick, and at each instant something
// falls due — a time limit or idle timeout, a drain deadline, a waiting
// session's start time or PENDING bound — the work it is due for, so due
// times fire at their instant rather than at the next sweep; each only
// while this manager holds the lease.
func (c *Coordinator) Run(ctx context.Context) error {
	cfg := c.conf()
	short := time.NewTicker(cfg.ShortInterval)
	defer short.Stop()
	long := time.NewTicker(cfg.LongInterval)
	defer long.Stop()
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	// Calls left running past their handler end with ctx; their results
	// must not be written to a store being closed.
	defer c.calls.bg.Wait()
	c.dueStale.Store(true)
	// storeDue is the store's next due time after handled, the instant
	// the due work last ran: zero at first, so what fell due while no
	// manager led runs at once, and never again once handled.
	var storeDue, handled time.Time
	held := false
	// rearm sets the due timer to the next due instant; the store is
	// asked again only when its answer may have moved.
	rearm := func() {
		now := c.clock.Now()
		if c.dueStale.Swap(false) {
			at, err := c.store.NextDue(ctx, handled, c.hooks.IdleTypes())
			if err != nil {
				c.dueStale.Store(true)
				if ctx.Err() == nil {
					c.log.Warn("coordinator: reading the next due time", "err", err)
				}
			} else {
				storeDue = at
			}
		}
		at := earliest(c.idle.nextDue(now), storeDue)
		due.Stop()
		if !at.IsZero() {
			due.Reset(max(at.Sub(now), 0))
		}
	}
	// lead reports whether this manager holds the lease; gaining it makes
	// the due times worth reading afresh.
	lead := func() bool {
		h := c.lease.Held(ctx)
		if h && !held {
			c.dueStale.Store(true)
		}
		held = h
		return h
	}
	if lead() {
		rearm()
	}
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
			if lead() {
				err = c.Cycle(ctx)
			}
		case <-short.C:
			if lead() {
				err = c.Cycle(ctx)
			}
		case <-due.C:
			if lead() {
				storeDue, handled = time.Time{}, c.clock.Now()
				c.dueStale.Store(true)
				err = errors.Join(c.EndDue(ctx), c.DrainDue(ctx), c.Cycle(ctx))
			}
		case <-long.C:
			if lead() {
				c.dueStale.Store(true)
				err = c.Sweep(ctx)
			}
		}
		if err != nil && ctx.Err() == nil {
			c.log.Error("coordinator", "err", err)
		}
		if held {
			rearm()
		}
	}
}

// Cycle runs every handler once, in lifecycle order, so a session with
// instant agents can go from PENDING to CREATING in one cycle. A handler's
// error does not stop the others; they are joined.
func (c *Coordinator) Cycle(ctx context.Context) error {
	c.probeIsolated(ctx)
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
