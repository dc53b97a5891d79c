package simulate

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/hook"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
)

// Origin is virtual time zero. A fixed instant, not the wall clock, so a
// report does not depend on when it was made.
var Origin = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// sweepEvery is how often, in virtual time, the coordinator's sweep runs.
// Its agent-loss half finds nothing (sim agents do not fail, see
// heartbeatNever); it still prunes the change feed and refreshes gauges,
// and hourly keeps its cost small against the cycles.
const sweepEvery = time.Hour

// heartbeatNever is the coordinator's heartbeat timeout in a simulation:
// agents are called in-process and never fall silent, and sending 1,000
// agents' heartbeats every few virtual seconds would cost more than the
// scheduling being measured.
const heartbeatNever = 100 * 365 * 24 * time.Hour

// maxSettle bounds the cycles run at one virtual instant; a run that
// keeps changing state without time passing is a livelock to report.
const maxSettle = 10_000

// Options are a run's knobs that are not the workload, cluster or settings.
type Options struct {
	// Seed seeds the sim runtimes (their draws only matter for outcomes
	// the workload does not fix).
	Seed uint64
	// Horizon stops the run at that virtual time; zero runs until every
	// session has ended or nothing more can happen.
	Horizon time.Duration
	// Samples is the number of points of the utilisation series; zero
	// means 200.
	Samples int
	// Progress, when set, receives a progress line now and then.
	Progress io.Writer
	// Tick, when above zero, handles what falls due only at whole
	// multiples of it (from virtual time zero), as a manager that cycled
	// on its timer alone would: everything due within one tick is handled
	// together at its end. Fewer, fuller cycles make a run faster, and
	// every wait longer by up to a tick; zero (the default) handles each
	// event at its exact instant.
	Tick time.Duration
	// TempDir holds the run's SQLite database; empty means /dev/shm where
	// it exists (a simulation needs no durability, and memory spares the
	// fsync each commit makes), else the system's temporary directory.
	TempDir string
	// Classes are the size classes' upper bounds in GPUs, ascending
	// (DefaultClasses when empty); one more class holds what is above.
	Classes []float64
	// Window, when above zero, measures each user's share of the main
	// slot (GPUs, else cpu) per window of this width (Variant.Windows).
	Window time.Duration
}

// Run replays w on cl under the given settings through the production
// coordinator, scheduler and SQLite store, and returns its report.
func Run(ctx context.Context, w Workload, cl Cluster, settings []Setting, opt Options) (Variant, error) {
	reg := domain.DefaultRegistry()
	su, err := newSetup(settings, w, reg)
	if err != nil {
		return Variant{}, err
	}
	r, closeRun, err := openRun(ctx, w, reg, su, Origin, opt)
	if err != nil {
		return Variant{}, err
	}
	defer closeRun()
	if err := r.setUp(ctx, cl); err != nil {
		return Variant{}, err
	}
	stopped, err := r.loop(ctx)
	if err != nil {
		return Variant{}, err
	}
	v := r.report(cl, settings)
	v.Partial = stopped
	return v, nil
}

// openRun makes a runner on a fresh temporary store whose clock starts at
// origin; closeRun removes the store.
func openRun(ctx context.Context, w Workload, reg *domain.Registry, su setup, origin time.Time, opt Options) (r *runner, closeRun func(), err error) {
	dir := opt.TempDir
	if dir == "" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			dir = "/dev/shm"
		}
	}
	tmp, err := os.MkdirTemp(dir, "sokovan-simulate-")
	if err != nil {
		return nil, nil, err
	}
	st, err := sqlite.Open(ctx, filepath.Join(tmp, "sim.db"), sqlite.Options{Registry: reg, Scratch: true})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	r = &runner{w: w, reg: reg, st: st, su: su, origin: origin, clock: sim.NewManualClock(origin), fleet: newFleet(reg),
		tr: newTracker(origin, len(w.Sessions)), opt: opt}
	return r, func() {
		st.Close()
		os.RemoveAll(tmp)
	}, nil
}

type runner struct {
	w   Workload
	reg *domain.Registry
	st  store.Store
	su  setup
	// origin is virtual time zero.
	origin time.Time
	clock  *sim.ManualClock
	fleet  *fleet
	c      *coordinator.Coordinator
	tr     *tracker
	opt    Options

	next      int // the next session to submit
	deadlines deadlineHeap
	// limits are the sessions' time limits as submitted (the workload's,
	// or the group's default), by workload index.
	limits    []time.Duration
	admit     *admit.Admitter
	cycles    int
	lastSweep time.Time
	progress  time.Time
}

func (r *runner) setUp(ctx context.Context, cl Cluster) error {
	if err := r.st.PutResourceGroup(ctx, r.su.group); err != nil {
		return err
	}
	for _, p := range r.su.policies {
		if err := r.st.PutPolicy(ctx, p); err != nil {
			return err
		}
	}
	n := 0
	for _, p := range cl.Pools {
		capacity, _ := r.reg.ParseSlots(p.Resources) // validated
		for range p.Count {
			n++
			a, err := r.st.RegisterAgent(ctx, domain.Agent{ID: agentID(n),
				ResourceGroup: GroupName, Address: "sim", Architecture: "x86_64", Runtime: "sim",
				Status: domain.AgentAlive, Schedulable: true, Capacity: capacity, MaxKernels: p.MaxKernels}, r.clock.Now())
			if err != nil {
				return err
			}
			if err := r.fleet.add(a.ID, a.Epoch, r.clock, r.opt.Seed^uint64(n)*0x9e3779b97f4a7c15); err != nil {
				return err
			}
		}
	}
	r.start()
	return nil
}

// start makes the coordinator and admission, once the store holds the
// cluster.
func (r *runner) start() {
	hooks := hook.Standard()
	r.c = coordinator.New(coordinator.Deps{Store: r.st, Agents: r.fleet, Scheduler: scheduler.New(scheduler.NewRegistry()),
		Clock: r.clock, Hooks: hooks}, coordinator.Config{HeartbeatTimeout: heartbeatNever,
		// Simulated agents answer at once; calls made in turn keep a run
		// repeatable.
		CallWait: -1})
	r.admit = admit.New(admit.Deps{Store: &fixedCluster{Store: r.st}, Slots: r.reg, Hooks: hooks, Clock: r.clock,
		Marker: r.c}, admit.Config{})
	// The first sweep runs at the first instant, so the usage history
	// (which the fairshare sequencer reads) starts with the run.
	r.lastSweep = r.clock.Now().Add(-sweepEvery)
	r.limits = make([]time.Duration, len(r.w.Sessions))
	for i, s := range r.w.Sessions {
		r.tr.idx[domain.SessionID(s.ID)] = i
	}
}

// loop is the simulation: at each virtual instant submit what is due, stop
// what ran out of time, run the coordinator until nothing changes, then
// jump to the next instant anything is due.
func (r *runner) loop(ctx context.Context) (stopped string, err error) {
	// A run stopped from outside (a timeout, an interrupt) keeps what it
	// has: the store's calls fail once ctx has ended, and that failure is
	// the stop, not the run's.
	defer func() {
		if ctx.Err() != nil {
			stopped = fmt.Sprintf("stopped at %s of virtual time: %v", fmtVirtual(r.clock.Now().Sub(r.origin)), context.Cause(ctx))
			err = nil
		}
	}()
	for {
		now := r.clock.Now()
		if ctx.Err() != nil {
			return "", nil
		}
		for r.next < len(r.w.Sessions) && !r.origin.Add(seconds(r.w.Sessions[r.next].Submit)).After(now) {
			if err := r.submit(ctx, r.next, now); err != nil {
				return "", err
			}
			r.next++
		}
		// The coordinator enforces time limits itself (EndDue, which its
		// sweep runs); the deadlines only wake the run at each limit's
		// instant, so the limit takes effect exactly rather than at the
		// next sweep.
		due := false
		for len(r.deadlines) > 0 && !r.deadlines[0].at.After(now) {
			d := heap.Pop(&r.deadlines).(deadline)
			if r.tr.recs[d.sess].end >= 0 {
				continue
			}
			r.tr.recs[d.sess].limitHit = true
			due = true
		}
		if due {
			if err := r.c.EndDue(ctx); err != nil {
				return "", fmt.Errorf("time limits at %v: %w", now.Sub(r.origin), err)
			}
		}
		if now.Sub(r.lastSweep) >= sweepEvery {
			r.lastSweep = now
			if err := r.c.Sweep(ctx); err != nil {
				return "", fmt.Errorf("sweep at %v: %w", now.Sub(r.origin), err)
			}
		}
		if err := r.settle(ctx); err != nil {
			return "", fmt.Errorf("at %v: %w", now.Sub(r.origin), err)
		}
		r.report1(false)
		if r.next == len(r.w.Sessions) && r.tr.ended == len(r.w.Sessions) {
			break
		}
		wake, ok := r.wake()
		if !ok || r.opt.Horizon > 0 && wake.Sub(r.origin) > r.opt.Horizon {
			break // nothing more can happen, or past the horizon
		}
		r.clock.Advance(wake.Sub(now))
	}
	r.report1(true)
	return "", nil
}

// wake is the next instant something is due: a submission, a sim timer (a
// kernel's exit), a time limit, or — while sessions are live — a sweep.
func (r *runner) wake() (time.Time, bool) {
	var at time.Time
	ok := false
	consider := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	if r.next < len(r.w.Sessions) {
		consider(r.origin.Add(seconds(r.w.Sessions[r.next].Submit)))
	}
	if t, has := r.clock.Next(); has {
		consider(t)
	}
	if len(r.deadlines) > 0 {
		consider(r.deadlines[0].at)
	}
	if p := r.su.group.Preemption; p.Enabled {
		// What the manager's idle round wakes for: a running session
		// coming of age, a preemption leaving the window.
		if t, has := r.tr.preemptWake(p, r.clock.Now().Sub(r.origin)); has {
			consider(r.origin.Add(t))
		}
	}
	if ok {
		// A sweep alone never wakes the run: with nothing else due, it
		// could not unblock anything.
		if t := r.lastSweep.Add(sweepEvery); t.Before(at) {
			at = t
		}
		if tick := r.opt.Tick; tick > 0 {
			since := at.Sub(r.origin)
			at = r.origin.Add((since + tick - 1) / tick * tick)
		}
	}
	return at, ok
}

// settle delivers agent events and runs cycles until one changes nothing.
// The production loop cycles on every mark and every second; at one
// virtual instant, cycling until the change feed stands still is what
// those would converge to.
func (r *runner) settle(ctx context.Context) error {
	for range maxSettle {
		if _, err := r.fleet.deliver(ctx, r.c); err != nil {
			return fmt.Errorf("deliver agent events: %w", err)
		}
		r.cycles++
		if err := r.c.Cycle(ctx); err != nil {
			return fmt.Errorf("cycle: %w", err)
		}
		if err := r.fleet.collect(ctx); err != nil {
			return err
		}
		n, err := r.tr.read(ctx, r.st)
		if err != nil {
			return err
		}
		for _, i := range r.tr.started {
			if lim := r.limits[i]; lim > 0 {
				heap.Push(&r.deadlines, deadline{at: r.origin.Add(r.tr.recs[i].start + lim), sess: i})
			}
		}
		r.tr.started = r.tr.started[:0]
		if n == 0 && len(r.fleet.events) == 0 {
			return nil
		}
	}
	return errors.New("the coordinator kept changing state without time passing")
}

func (r *runner) owner(i int) domain.Owner {
	s := r.w.Sessions[i]
	return domain.Owner{User: s.User, Project: s.Project, Domain: "default"}
}

// submit creates a session as POST /v1/sessions does, through the same
// admission (internal/admit): the same defaults, the same refusals (type
// not run by the group, below the group's minimum, a dependency that was
// itself refused, max_slots over the whole session, max_pending_sessions
// counted by the store), then the store's CreateSession. A refused
// session is counted, not an error: the API would have answered 400, 409
// or 429 and the user gone away.
func (r *runner) submit(ctx context.Context, i int, now time.Time) error {
	s := r.w.Sessions[i]
	rec := &r.tr.recs[i]
	rec.submitted = true
	req := admit.Request{ID: domain.SessionID(s.ID), Owner: r.owner(i), Name: s.ID, Type: s.Type,
		Image: "exit:" + strconv.Itoa(s.ExitCode), Resources: s.Resources, ClusterMode: s.ClusterMode,
		ClusterSize: &s.ClusterSize, Priority: s.Priority, ResourceGroup: GroupName, DependsOn: s.DependsOn,
		Resolve: r.dependency, Preemptible: s.Preemptible, Requeue: s.Requeue,
		Env: map[string]string{"SOKOVAN_EXIT_AFTER": strconv.FormatFloat(seconds(s.Duration).Seconds(), 'f', -1, 64)}}
	if lim := seconds(s.TimeLimit); lim > 0 {
		req.TimeLimit = lim.String() // exact: ParseDuration reads back what String writes
	}
	sess, err := r.admit.Admit(ctx, req)
	var refused *admit.Error
	if errors.As(err, &refused) {
		rec.rejected, rec.status, rec.end = refused.Error(), "REJECTED", now.Sub(r.origin)
		r.tr.ended++
		return nil
	}
	if err != nil {
		return fmt.Errorf("submit %s: %w", s.ID, err)
	}
	r.limits[i] = sess.TimeLimit
	rec.req, rec.total = sess.Requested, sess.Requested.Scale(s.ClusterSize)
	return nil
}

// dependency finds a session of the workload that a later one depends on;
// one that was refused was never stored.
func (r *runner) dependency(ctx context.Context, ref string) (domain.SessionID, error) {
	_, err := r.st.GetSession(ctx, domain.SessionID(ref))
	if errors.Is(err, store.ErrNotFound) {
		return "", &admit.Error{Class: admit.BadRequest, Message: fmt.Sprintf("no such session %s", ref)}
	}
	return domain.SessionID(ref), err
}

// report1 writes a progress line at most once a wall-clock second (the
// wall clock only paces the line; nothing measured reads it).
func (r *runner) report1(last bool) {
	if r.opt.Progress == nil {
		return
	}
	if t := time.Now(); last || t.Sub(r.progress) >= time.Second {
		r.progress = t
		end := "\r"
		if last {
			end = "\n"
		}
		fmt.Fprintf(r.opt.Progress, "simulate: %d/%d sessions ended, virtual time %s%s",
			r.tr.ended, len(r.w.Sessions), fmtVirtual(r.clock.Now().Sub(r.origin)), end)
	}
}

func fmtVirtual(d time.Duration) string {
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	return fmt.Sprintf("%dd%02dh%02dm%02ds", days, d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second)
}

type deadline struct {
	at   time.Time
	sess int
}

// deadlineHeap orders time limits by instant, then by session, so two due
// at once are stopped in the same order every run.
type deadlineHeap []deadline

func (h deadlineHeap) Len() int { return len(h) }
func (h deadlineHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].sess < h[j].sess
}
func (h deadlineHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)   { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
