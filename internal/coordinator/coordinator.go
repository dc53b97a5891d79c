package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/kernelstate"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
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
	c := &Coordinator{store: d.Store, agents: d.Agents, sched: d.Scheduler, slots: d.Slots, clock: d.Clock,
		log: d.Log, metrics: d.Metrics, marks: make(chan struct{}, 1), lease: d.Lease, reconf: make(chan struct{}, 1)}
	full := cfg.withDefaults()
	c.cfg.Store(&full)
	c.defaults.Store(&GroupDefaults{})
	return c
}

// GroupDefaults fill what a resource group leaves unset: max_retries when
// zero, and a residence bound for a status whose bound is zero.
type GroupDefaults struct {
	MaxRetries int
	Timeouts   domain.Timeouts
}

// Configure changes timers and group defaults while running; zero fields
// of cfg take the built-in defaults. A running loop resets its tickers.
func (c *Coordinator) Configure(cfg Config, d GroupDefaults) {
	full := cfg.withDefaults()
	c.cfg.Store(&full)
	c.defaults.Store(&d)
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

// Sweep prunes the change feed and handles agent loss: an ALIVE agent
// silent past the heartbeat timeout becomes LOST and unschedulable; after
// the grace its kernels are given up — sessions that had not started go
// back to PENDING with their slots released, running ones see their
// kernels in ERROR and terminate.
func (c *Coordinator) Sweep(ctx context.Context) error {
	now := c.clock.Now()
	if err := c.countSessions(ctx); err != nil {
		return err
	}
	cfg := c.conf()
	if _, err := c.store.PruneChanges(ctx, now.Add(-cfg.ChangeRetention)); err != nil {
		return fmt.Errorf("sweep: prune the change feed: %w", err)
	}
	agents, err := c.store.ListAgents(ctx, store.AgentFilter{Statuses: []domain.AgentStatus{domain.AgentAlive, domain.AgentLost}})
	if err != nil {
		return fmt.Errorf("sweep: list agents: %w", err)
	}
	for _, a := range agents {
		silent := now.Sub(a.LastHeartbeat)
		if a.Status == domain.AgentAlive && silent > cfg.HeartbeatTimeout {
			if err := c.store.SetAgentStatus(ctx, a.ID, domain.AgentLost); err != nil {
				return fmt.Errorf("sweep: mark %s lost: %w", a.ID, err)
			}
			c.log.Warn("agent lost", "agent", a.ID, "silent", silent)
			a.Status = domain.AgentLost
		}
		if a.Status == domain.AgentLost && silent > cfg.HeartbeatTimeout+cfg.LostGrace {
			if err := c.abandonAgent(ctx, a.ID, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// countSessions refreshes the live-sessions-by-status gauge.
func (c *Coordinator) countSessions(ctx context.Context) error {
	var live []domain.SessionStatus
	for _, st := range domain.SessionStatuses() {
		if !st.Terminal() {
			live = append(live, st)
		}
	}
	sessions, err := c.store.ListSessions(ctx, store.SessionFilter{Statuses: live})
	if err != nil {
		return fmt.Errorf("sweep: count sessions: %w", err)
	}
	counts := make(map[domain.SessionStatus]int, len(live))
	for _, s := range sessions {
		counts[s.Status]++
	}
	for _, st := range live {
		c.metrics.sessions(st, counts[st])
	}
	return nil
}

func (c *Coordinator) abandonAgent(ctx context.Context, agent domain.AgentID, now time.Time) error {
	kernels, err := c.store.ListKernels(ctx, store.KernelFilter{Agents: []domain.AgentID{agent}})
	if err != nil {
		return fmt.Errorf("sweep: kernels of %s: %w", agent, err)
	}
	requeue := map[domain.SessionID]bool{}
	var hist []domain.HistoryEntry
	giveUp := func(k domain.Kernel) error {
		_, err := c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: []domain.KernelStatus{k.Status},
			To: domain.KernelError, Reason: fmt.Sprintf("agent %s lost", agent), Now: now})
		if err != nil && !errors.Is(err, store.ErrGuardFailed) {
			return fmt.Errorf("sweep: give up kernel %s: %w", k.ID, err)
		}
		return nil
	}
	for _, k := range kernels {
		if !k.Status.HoldsResources() {
			continue
		}
		if k.Status < domain.KernelRunning {
			requeue[k.SessionID] = true
			continue
		}
		if err := giveUp(k); err != nil {
			return err
		}
	}
	lost := domain.LifecycleHandler{Name: "AgentLost"}
	gs, err := c.groups(ctx)
	if err != nil {
		return err
	}
	var sessions []store.SessionWithKernels
	if len(requeue) > 0 { // an empty IDs filter would select every session
		list, err := c.store.ListSessions(ctx, store.SessionFilter{IDs: sortedSessions(requeue)})
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		if sessions, err = c.withKernels(ctx, list); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	for i := range sessions {
		s := &sessions[i]
		id := s.Session.ID
		// An ending session (terminating, or one that cannot start over)
		// loses what it had on the lost agent with the agent, rather than
		// waiting out the TERMINATING bound on destroy calls that cannot
		// succeed.
		ending := s.Session.Status == domain.SessionTerminating
		if slices.Contains(notStarted, s.Session.Status) {
			msg := fmt.Sprintf("agent %s lost before the session started", agent)
			if err := c.store.AvoidAgents(ctx, id, []domain.AgentID{agent}); err != nil {
				return fmt.Errorf("sweep: %w", err)
			}
			to, err := c.leave(ctx, lost, s, domain.ResultExpired,
				domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}, msg, now, gs,
				func(e domain.HistoryEntry) { hist = append(hist, e) })
			if err != nil {
				return fmt.Errorf("sweep: requeue %s: %w", id, err)
			}
			if to != 0 {
				hist = append(hist, domain.HistoryEntry{SessionID: id, At: now, Handler: lost.Name, Result: domain.ResultExpired,
					From: s.Session.Status, To: to, Message: msg, Attempt: 1})
			}
			// Requeued, cancelled, or moved under us (the next sweep looks
			// again) — unless it could not start over.
			ending = to == domain.SessionTerminating
		}
		if !ending {
			continue
		}
		// Kernels as read before the move: the guard on their status makes
		// a stale one a no-op, left to the next sweep.
		for _, k := range s.Kernels {
			if k.Agent == agent && k.Status.HoldsResources() {
				if err := giveUp(k); err != nil {
					return err
				}
			}
		}
	}
	if len(requeue) > 0 || len(kernels) > 0 {
		c.Mark()
	}
	if len(hist) == 0 {
		return nil
	}
	return c.store.AppendHistory(ctx, hist)
}

// notStarted are the statuses of a session placed but not yet running.
var notStarted = []domain.SessionStatus{domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared, domain.SessionCreating}

func sortedSessions(m map[domain.SessionID]bool) []domain.SessionID {
	out := make([]domain.SessionID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// HandleEvent applies one agent event through the kernel state engine. A
// duplicate, stale or out-of-order event changes nothing.
func (c *Coordinator) HandleEvent(ctx context.Context, ev kernelstate.Event) error {
	return c.HandleEvents(ctx, []kernelstate.Event{ev})
}

// HandleEvents applies a batch of agent events in order, reading each
// agent once for the batch rather than once per event.
func (c *Coordinator) HandleEvents(ctx context.Context, evs []kernelstate.Event) error {
	agents := map[domain.AgentID]domain.Agent{}
	now := c.clock.Now()
	changed := false
	for _, ev := range evs {
		agent, ok := agents[ev.Agent]
		if !ok {
			var err error
			if agent, err = c.store.GetAgent(ctx, ev.Agent); err != nil {
				return fmt.Errorf("agent %s: %w", ev.Agent, err)
			}
			agents[ev.Agent] = agent
		}
		var filter store.KernelFilter
		if ev.Kind.ImageEvent() {
			filter = store.KernelFilter{Agents: []domain.AgentID{ev.Agent},
				Statuses: []domain.KernelStatus{domain.KernelScheduled, domain.KernelPreparing, domain.KernelPulling}}
		} else {
			filter = store.KernelFilter{IDs: []domain.KernelID{ev.Kernel}}
		}
		kernels, err := c.store.ListKernels(ctx, filter)
		if err != nil {
			return fmt.Errorf("event %s: %w", ev.Kind, err)
		}
		for _, k := range kernels {
			applied, err := c.applyEvent(ctx, k, agent.Epoch, ev, now)
			if err != nil {
				return err
			}
			changed = changed || applied
		}
	}
	if changed {
		c.Mark()
	}
	return nil
}

// applyEvent judges the event against the kernel and writes the change
// guarded by the status it judged from. When another writer moved the
// kernel first, it reads the kernel again and judges anew, so an event is
// never dropped for losing a race (kernel_started arriving while the
// coordinator commits CREATING, say).
func (c *Coordinator) applyEvent(ctx context.Context, k domain.Kernel, epoch int64, ev kernelstate.Event, now time.Time) (bool, error) {
	for range 5 {
		ch, ok := kernelstate.Apply(k, epoch, ev)
		if !ok || ch.To == 0 {
			return false, nil
		}
		_, err := c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: []domain.KernelStatus{k.Status},
			To: ch.To, ExitCode: ch.ExitCode, ContainerID: ch.ContainerID, Reason: ch.Reason, Now: now})
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, store.ErrGuardFailed) {
			return false, fmt.Errorf("event %s on %s: %w", ev.Kind, k.ID, err)
		}
		fresh, err := c.store.ListKernels(ctx, store.KernelFilter{IDs: []domain.KernelID{k.ID}})
		if err != nil {
			return false, fmt.Errorf("event %s on %s: %w", ev.Kind, k.ID, err)
		}
		if len(fresh) == 0 {
			return false, nil
		}
		k = fresh[0]
	}
	return false, fmt.Errorf("event %s on %s: kernel kept changing under it", ev.Kind, k.ID)
}

// Terminate ends a session at a user's request: a PENDING one is cancelled
// at once; any other live one goes TERMINATING and TerminateSessions
// destroys its kernels. With force its kernels are also killed at once,
// without the grace period, also when the session was already terminating.
// It returns the session as it is afterwards.
func (c *Coordinator) Terminate(ctx context.Context, id domain.SessionID, reason string, force bool) (store.SessionWithKernels, error) {
	// A session may move between the read and the guarded write; a few
	// tries see where it went.
	for range 5 {
		now := c.clock.Now()
		s, err := c.store.GetSession(ctx, id)
		if err != nil {
			return store.SessionWithKernels{}, err
		}
		from := s.Session.Status
		var to domain.Transition
		var handler domain.HandlerName
		switch {
		case from == domain.SessionPending:
			to = domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}
			handler = "UserCancel"
		case from.Terminal():
			return s, nil
		case from == domain.SessionTerminating:
			if !force {
				return s, nil
			}
			return c.forceDestroy(ctx, s, now)
		default:
			to = domain.Transition{Session: domain.SessionTerminating}
			handler = "UserTerminate"
		}
		moved, err := c.store.TransitionSessions(ctx, []domain.SessionID{id}, []domain.SessionStatus{from}, to, reason, now)
		if err != nil {
			return store.SessionWithKernels{}, err
		}
		if len(moved) == 0 {
			continue
		}
		if err := c.store.AppendHistory(ctx, []domain.HistoryEntry{{SessionID: id, At: now, Handler: handler,
			Result: domain.ResultSuccess, From: from, To: to.Session, Message: reason, Attempt: 1}}); err != nil {
			return store.SessionWithKernels{}, err
		}
		c.Mark()
		if force && to.Session == domain.SessionTerminating {
			return c.forceDestroy(ctx, s, now)
		}
		return c.store.GetSession(ctx, id)
	}
	return store.SessionWithKernels{}, fmt.Errorf("terminate %s: it kept changing status; try again: %w", id, store.ErrConflict)
}

// forceDestroy kills a terminating session's kernels without grace, in
// parallel, and records each one its agent confirms gone, so a forced end
// frees its slots now instead of at the next TerminateSessions round. A
// kernel whose agent does not answer is left to TerminateSessions, which
// retries until the TERMINATING bound (releasing slots of a kernel that may
// still run would double-book them).
func (c *Coordinator) forceDestroy(ctx context.Context, s store.SessionWithKernels, now time.Time) (store.SessionWithKernels, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(s.Kernels))
	for i, k := range s.Kernels {
		if k.Agent == "" || k.Status.Terminal() || !k.Status.HoldsResources() {
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, c.conf().CallTimeout)
			err := c.agents.DestroyKernel(cctx, k.Agent, k.ID, true)
			cancel()
			if err != nil {
				c.log.Warn("forced destroy", "agent", k.Agent, "kernel", k.ID, "err", err)
				return
			}
			_, err = c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: nonTerminal(),
				To: domain.KernelTerminated, Reason: "destroyed (forced)", Now: now})
			if err != nil && !errors.Is(err, store.ErrGuardFailed) {
				errs[i] = fmt.Errorf("mark %s terminated: %w", k.ID, err)
			}
		})
	}
	wg.Wait()
	c.Mark()
	if err := errors.Join(errs...); err != nil {
		return store.SessionWithKernels{}, err
	}
	return c.store.GetSession(ctx, s.Session.ID)
}

// Bound is how long a session of the group may stay in the status before
// it expires, with the shared defaults applied as the handlers apply them;
// 0 when unbounded.
func (c *Coordinator) Bound(ctx context.Context, group string, status domain.SessionStatus) (time.Duration, error) {
	gs, err := c.groups(ctx)
	if err != nil {
		return 0, err
	}
	return gs.timeout(group, status), nil
}

// KernelReport is one kernel an agent says it has.
type KernelReport struct {
	ID       domain.KernelID
	Running  bool
	ExitCode *int
	Reason   string
}

// Settle takes an agent's report of its kernels (registration or
// heartbeat). What the report implies is applied — a kernel that runs has
// started, one that exited has terminated — so a lost event is made good by
// the next report. It returns the kernels the agent is to destroy: unknown,
// ended (once the manager has recorded the end), not yet placed, or placed
// on another agent. A report from an earlier epoch than the agent's current
// one is stale and answered with nothing, so an old incarnation can neither
// move kernels nor have live ones destroyed.
//
// It reads the agent and the reported kernels once and writes only where a
// report changes something, because it runs for every heartbeat.
func (c *Coordinator) Settle(ctx context.Context, agentID domain.AgentID, epoch int64, reports []KernelReport) ([]domain.KernelID, error) {
	agent, err := c.store.GetAgent(ctx, agentID)
	if err != nil {
		return nil, err
	}
	if epoch < agent.Epoch || len(reports) == 0 {
		return nil, nil
	}
	ids := make([]domain.KernelID, len(reports))
	for i, r := range reports {
		ids[i] = r.ID
	}
	known, err := c.store.ListKernels(ctx, store.KernelFilter{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("settle %s: %w", agentID, err)
	}
	byID := make(map[domain.KernelID]domain.Kernel, len(known))
	for _, k := range known {
		byID[k.ID] = k
	}
	now := c.clock.Now()
	changed := false
	var destroy []domain.KernelID
	for _, r := range reports {
		k, ok := byID[r.ID]
		if !ok || k.Agent != agentID || k.Status == domain.KernelPending {
			destroy = append(destroy, r.ID)
			continue
		}
		ev := kernelstate.Event{Kind: kernelstate.KernelStarted, Agent: agentID, Epoch: epoch, Kernel: r.ID, At: now}
		if !r.Running {
			ev.Kind, ev.ExitCode, ev.Reason = kernelstate.KernelTerminated, r.ExitCode, r.Reason
		}
		applied, err := c.applyEvent(ctx, k, agent.Epoch, ev, now)
		if err != nil {
			return nil, err
		}
		changed = changed || applied
		// An exited kernel is the agent's to clean up once its end is
		// recorded (just now, or earlier); a running one only when the
		// manager already ended it.
		if !r.Running || k.Status.Terminal() {
			destroy = append(destroy, r.ID)
		}
	}
	if changed {
		c.Mark()
	}
	slices.Sort(destroy)
	return destroy, nil
}

// AgentRestarted settles what an agent's earlier incarnation ran: a kernel
// the manager placed there that had been created (CREATING, RUNNING,
// TERMINATING) and that the agent, registering under a new epoch, does not
// report has died with it. It ends in ERROR with that reason, which the
// promotion handlers carry to its session; its slots are released once.
// Kernels not yet created there (SCHEDULED through PREPARED) are fine: the
// handlers ask the new incarnation again.
func (c *Coordinator) AgentRestarted(ctx context.Context, agentID domain.AgentID, epoch int64, present []domain.KernelID) error {
	agent, err := c.store.GetAgent(ctx, agentID)
	if err != nil {
		return err
	}
	if epoch < agent.Epoch {
		return nil
	}
	kernels, err := c.store.ListKernels(ctx, store.KernelFilter{Agents: []domain.AgentID{agentID},
		Statuses: []domain.KernelStatus{domain.KernelCreating, domain.KernelRunning, domain.KernelTerminating}})
	if err != nil {
		return fmt.Errorf("agent %s restarted: %w", agentID, err)
	}
	now := c.clock.Now()
	lost := false
	for _, k := range kernels {
		if slices.Contains(present, k.ID) {
			continue
		}
		_, err := c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: []domain.KernelStatus{k.Status},
			To: domain.KernelError, Reason: fmt.Sprintf("not running on agent %s after it restarted", agentID), Now: now})
		if err != nil && !errors.Is(err, store.ErrGuardFailed) {
			return fmt.Errorf("agent %s restarted: kernel %s: %w", agentID, k.ID, err)
		}
		lost = true
	}
	if lost {
		c.Mark()
	}
	return nil
}
