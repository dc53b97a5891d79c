package coordinator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// callKind names what a handler asks of agents.
type callKind string

const (
	callPull    callKind = "pull"
	callCreate  callKind = "create"
	callDestroy callKind = "destroy"
)

// callShape bounds one kind's calls to an agent: how many may be in flight
// at once, and how many items (kernels) one carries. A call carries
// everything pending for its agent up to its cap, so a burst of a thousand
// kernels is a few calls, not a thousand; the cap keeps each call short
// enough that a healthy agent answers well within the call timeout however
// large the burst (the agent starts a call's kernels 16 at a time), and a
// hung agent holds at most a few calls.
type callShape struct {
	inFlight int
	perCall  int // 0: no cap
}

var callShapes = map[callKind]callShape{
	callPull:    {inFlight: 1},
	callCreate:  {inFlight: 2, perCall: 32},
	callDestroy: {inFlight: 2, perCall: destroysPerAgent},
}

// maxCalls bounds the agent calls in flight at once across all handlers,
// so a large cluster does not open thousands of connections in one cycle.
const maxCalls = 64

// destroysPerAgent bounds the kernels of one agent destroyed at once: a
// destroy waits out the kernel's grace period, so they are worth
// overlapping, but not by the hundred on one host.
const destroysPerAgent = 16

// Probes of an isolated agent: the first one a second after the call that
// timed out, then at doubling intervals up to probeMaxBackoff; each gets
// at most probeTimeout (or the call timeout, if shorter) to answer.
const (
	probeFirst      = time.Second
	probeMaxBackoff = 30 * time.Second
	probeTimeout    = 3 * time.Second
)

// Prober is what an Agents implementation may add so the coordinator can
// ask an isolated agent, cheaply, whether it answers again. Without it an
// isolation ends when its backoff passes, and the next real call is the
// probe.
type Prober interface {
	Probe(ctx context.Context, agent domain.AgentID) error
}

// KernelErrors is CreateKernels' answer when the agent started some of
// the call's kernels and not others: why each one it did not start
// failed. Kernels it does not name were started.
type KernelErrors map[domain.KernelID]error

func (e KernelErrors) Error() string {
	ids := make([]string, 0, len(e))
	for id := range e {
		ids = append(ids, string(id))
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s: %v", id, e[domain.KernelID(id)])
	}
	return strings.Join(parts, "; ")
}

// kernelErr is what a call's answer says of one kernel: nil when the
// agent did what was asked of it.
func kernelErr(err error, k domain.KernelID) error {
	var ke KernelErrors
	if errors.As(err, &ke) {
		return ke[k]
	}
	return err
}

// agentCalls keeps the agents the coordinator has stopped waiting on and
// the calls in flight.
//
// An agent whose call timed out is isolated: handlers skip it, leaving its
// sessions to wait with a note naming it, until a probe (or, without one,
// the backoff) says it answers again. One wedged runtime then costs its
// own sessions, not everyone's: before, every handler sat out the call
// timeout on it, one agent after another, in every cycle.
type agentCalls struct {
	mu       sync.Mutex
	isolated map[domain.AgentID]*isolation
	inflight map[callKey]int
	// busy counts, per kind, the calls under way for each session, from
	// their start until their results are recorded: a session in one is
	// left out of the next runs, since a second call could only repeat
	// the first (a create twice, a destroy twice).
	busy map[callKind]map[domain.SessionID]int
	sem  chan struct{}
	// bg counts work left running past the handler that started it.
	bg sync.WaitGroup
}

type callKey struct {
	kind  callKind
	agent domain.AgentID
}

type isolation struct {
	since   time.Time
	why     string
	probeAt time.Time
	backoff time.Duration
	probing bool
}

func newAgentCalls() *agentCalls {
	return &agentCalls{isolated: map[domain.AgentID]*isolation{}, inflight: map[callKey]int{},
		busy: map[callKind]map[domain.SessionID]int{}, sem: make(chan struct{}, maxCalls)}
}

// note is why calls to agent are not made now: a note for its sessions'
// history while it is isolated, "" otherwise.
func (a *agentCalls) note(agent domain.AgentID) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if iso, ok := a.isolated[agent]; ok {
		return fmt.Sprintf("agent %s is not answering (%s, at %s); its calls wait until it answers again",
			agent, iso.why, iso.since.UTC().Format(time.RFC3339))
	}
	return ""
}

// isolatedAmong is note for the first isolated agent of agents.
func (a *agentCalls) isolatedAmong(agents []domain.AgentID) string {
	for _, ag := range agents {
		if n := a.note(ag); n != "" {
			return n
		}
	}
	return ""
}

// free is how many more calls of kind agent may take now.
func (a *agentCalls) free(kind callKind, agent domain.AgentID) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return callShapes[kind].inFlight - a.inflight[callKey{kind, agent}]
}

func (a *agentCalls) take(kind callKind, agent domain.AgentID, sessions []domain.SessionID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight[callKey{kind, agent}]++
	a.hold(kind, sessions, 1)
}

func (a *agentCalls) release(kind callKind, agent domain.AgentID, sessions []domain.SessionID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := callKey{kind, agent}
	if a.inflight[k]--; a.inflight[k] <= 0 {
		delete(a.inflight, k)
	}
	a.hold(kind, sessions, -1)
}

// hold counts sessions into (+1) or out of (-1) calls of kind; a.mu is
// held.
func (a *agentCalls) hold(kind callKind, sessions []domain.SessionID, d int) {
	if a.busy[kind] == nil {
		a.busy[kind] = map[domain.SessionID]int{}
	}
	for _, id := range sessions {
		if a.busy[kind][id] += d; a.busy[kind][id] <= 0 {
			delete(a.busy[kind], id)
		}
	}
}

// holding runs fn with sessions counted as in a call of kind, for calls
// made outside dispatch (a forced destroy), so the handlers leave them be.
func (a *agentCalls) holding(kind callKind, sessions []domain.SessionID, fn func()) {
	a.mu.Lock()
	a.hold(kind, sessions, 1)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.hold(kind, sessions, -1)
		a.mu.Unlock()
	}()
	fn()
}

// inCall reports whether a call of kind for the session is under way.
func (a *agentCalls) inCall(kind callKind, id domain.SessionID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.busy[kind][id] > 0
}

// isIsolated reports whether calls to agent are being skipped.
func (a *agentCalls) isIsolated(agent domain.AgentID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.isolated[agent]
	return ok
}

// isolate stops calls to agent after one timed out.
func (a *agentCalls) isolate(agent domain.AgentID, why string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.isolated[agent]; ok {
		return false
	}
	a.isolated[agent] = &isolation{since: now, why: why, probeAt: now.Add(probeFirst), backoff: probeFirst}
	return true
}

// answered ends agent's isolation.
func (a *agentCalls) answered(agent domain.AgentID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.isolated[agent]
	delete(a.isolated, agent)
	return ok
}

// dueProbes returns the isolated agents whose probe is due and marks them
// probing; without a prober their isolation simply ends.
func (a *agentCalls) dueProbes(now time.Time, canProbe bool) (probe, freed []domain.AgentID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, iso := range a.isolated {
		if iso.probing || now.Before(iso.probeAt) {
			continue
		}
		if !canProbe {
			delete(a.isolated, id)
			freed = append(freed, id)
			continue
		}
		iso.probing = true
		probe = append(probe, id)
	}
	return probe, freed
}

// probeFailed schedules agent's next probe further out.
func (a *agentCalls) probeFailed(agent domain.AgentID, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if iso, ok := a.isolated[agent]; ok {
		iso.probing = false
		iso.backoff = min(2*iso.backoff, probeMaxBackoff)
		iso.probeAt = now.Add(iso.backoff)
	}
}

// timedOut reports whether err is a call that ran out of time rather than
// one the agent answered or refused at once.
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// serial reports whether agent calls are made one after another in the
// handler, as the simulator needs for a repeatable run (Config.CallWait).
func (c *Coordinator) serial() bool { return c.conf().CallWait < 0 }

// call runs fn against agent within the call timeout, isolating the agent
// when it does not answer in time.
func (c *Coordinator) call(ctx context.Context, agent domain.AgentID, fn func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, c.conf().CallTimeout)
	defer cancel()
	err := fn(cctx)
	if err != nil && timedOut(err) && ctx.Err() == nil {
		if c.calls.isolate(agent, fmt.Sprintf("a call timed out after %s", c.conf().CallTimeout), c.clock.Now()) {
			c.log.Warn("agent isolated: a call timed out; its calls wait until it answers", "agent", agent, "err", err)
		}
	}
	return err
}

// probeIsolated probes, in the background, every isolated agent whose
// probe is due; one that answers is called again from the next cycle on.
func (c *Coordinator) probeIsolated(ctx context.Context) {
	p, canProbe := c.agents.(Prober)
	probe, freed := c.calls.dueProbes(c.clock.Now(), canProbe)
	for _, id := range freed {
		c.log.Info("agent isolation ended: its calls are tried again", "agent", id)
	}
	if len(freed) > 0 {
		c.Mark()
	}
	for _, id := range probe {
		c.calls.bg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, min(probeTimeout, c.conf().CallTimeout))
			err := p.Probe(cctx, id)
			cancel()
			if err != nil {
				c.calls.probeFailed(id, c.clock.Now())
				return
			}
			if c.calls.answered(id) {
				c.log.Info("agent answers again: its calls resume", "agent", id)
				c.Mark()
			}
		})
	}
}

// AgentAnswered ends an agent's isolation: it has just shown it answers
// (it registered afresh).
func (c *Coordinator) AgentAnswered(agent domain.AgentID) {
	if c.calls.answered(agent) {
		c.Mark()
	}
}

// Isolated lists the agents whose calls are being skipped, with since when
// and why; for operators and tests.
func (c *Coordinator) Isolated() map[domain.AgentID]string {
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	out := make(map[domain.AgentID]string, len(c.calls.isolated))
	for id, iso := range c.calls.isolated {
		out[id] = iso.why
	}
	return out
}

// WaitCalls waits for agent calls and their results left running past the
// handlers that started them; for tests and shutdown.
func (c *Coordinator) WaitCalls() { c.calls.bg.Wait() }

// agentCall is one call a handler makes to one agent for the sessions it
// names.
type agentCall struct {
	agent    domain.AgentID
	sessions []domain.SessionID
	do       func(ctx context.Context) error
	err      error
}

// dispatch makes a handler's agent calls and hands the finished ones to
// settle, which records their sessions' results.
//
// Calls run concurrently (at most maxCalls at once across handlers), and
// settle gets them in batches as they finish, so a session's result is
// recorded when its own calls return rather than the slowest agent's.
// After Config.CallWait the handler goes on and the rest are settled in
// the background as they finish: the cycle, and with it every promotion,
// is not held up by one slow agent. With a negative CallWait the calls are
// made one after another, in the order given, and settled once.
func (c *Coordinator) dispatch(ctx context.Context, kind callKind, calls []*agentCall,
	settle func(context.Context, []*agentCall) error) error {
	if len(calls) == 0 {
		return nil
	}
	for _, cl := range calls {
		c.calls.take(kind, cl.agent, cl.sessions)
	}
	release := func(done []*agentCall) {
		for _, cl := range done {
			c.calls.release(kind, cl.agent, cl.sessions)
		}
	}
	if c.serial() {
		for _, cl := range calls {
			cl.err = c.call(ctx, cl.agent, cl.do)
		}
		defer release(calls)
		return settle(ctx, calls)
	}
	finished := make(chan *agentCall, len(calls))
	for _, cl := range calls {
		c.calls.bg.Go(func() {
			select {
			case c.calls.sem <- struct{}{}:
				cl.err = c.call(ctx, cl.agent, cl.do)
				<-c.calls.sem
			case <-ctx.Done():
				cl.err = ctx.Err()
			}
			finished <- cl
		})
	}
	left := len(calls)
	// collect settles what has finished, waiting for at least one until
	// the deadline (none: until one finishes).
	collect := func(deadline <-chan time.Time) (bool, error) {
		var batch []*agentCall
		select {
		case cl := <-finished:
			batch = append(batch, cl)
		case <-deadline:
			return false, nil
		}
		for more := true; more; {
			select {
			case cl := <-finished:
				batch = append(batch, cl)
			default:
				more = false
			}
		}
		left -= len(batch)
		defer release(batch)
		return true, settle(ctx, batch)
	}
	wait := time.NewTimer(c.conf().CallWait)
	defer wait.Stop()
	var errs []error
	for left > 0 {
		ok, err := collect(wait.C)
		if err != nil {
			errs = append(errs, err)
		}
		if !ok {
			break
		}
	}
	if left > 0 {
		c.calls.bg.Go(func() {
			for left > 0 {
				if _, err := collect(nil); err != nil && ctx.Err() == nil {
					c.log.Error("recording agent calls' results", "calls", string(kind), "err", err)
				}
			}
			c.Mark()
		})
	}
	return errors.Join(errs...)
}

// quietly runs fire-and-forget agent work, such as destroying a kernel
// that must not outlive a placement: in the background, unless calls are
// serial, and not at all on an isolated agent, whose kernels are found
// again when it next reports them.
func (c *Coordinator) quietly(ctx context.Context, agent domain.AgentID, fn func(context.Context) error) {
	if c.calls.isIsolated(agent) {
		return
	}
	run := func() {
		if err := c.call(ctx, agent, fn); err != nil {
			c.log.Warn("agent call", "agent", agent, "err", err)
		}
	}
	if c.serial() {
		run()
		return
	}
	c.calls.bg.Go(func() {
		select {
		case c.calls.sem <- struct{}{}:
			run()
			<-c.calls.sem
		case <-ctx.Done():
		}
	})
}

// packer fills a handler run's calls: each session's items for an agent
// go into one call to that agent, a call holds at most its kind's cap, and
// an agent gets no more calls than it has free. A session goes in whole or
// not at all, so one whose agent has no room waits for the next run.
type packer[T any] struct {
	kind  callKind
	c     *Coordinator
	calls map[domain.AgentID][]*packed[T]
	room  map[domain.AgentID]int
}

// packed is one call being filled.
type packed[T any] struct {
	agent    domain.AgentID
	sessions []domain.SessionID
	items    []T
}

func newPacker[T any](c *Coordinator, kind callKind) *packer[T] {
	return &packer[T]{kind: kind, c: c, calls: map[domain.AgentID][]*packed[T]{}, room: map[domain.AgentID]int{}}
}

// fit is the call of agent that n more items can join, or nil.
func (p *packer[T]) fit(agent domain.AgentID, n int) *packed[T] {
	cs := p.calls[agent]
	if len(cs) == 0 {
		return nil
	}
	last := cs[len(cs)-1]
	if limit := callShapes[p.kind].perCall; limit > 0 && len(last.items)+n > limit {
		return nil
	}
	return last
}

func (p *packer[T]) roomFor(agent domain.AgentID) int {
	r, ok := p.room[agent]
	if !ok {
		r = p.c.calls.free(p.kind, agent)
		p.room[agent] = r
	}
	return r
}

// add puts session id's items, by agent, into the calls; false when some
// agent has no room for them.
func (p *packer[T]) add(id domain.SessionID, items map[domain.AgentID][]T) bool {
	agents := sortedAgents(items)
	for _, a := range agents {
		if p.fit(a, len(items[a])) == nil && p.roomFor(a) <= 0 {
			return false
		}
	}
	for _, a := range agents {
		cl := p.fit(a, len(items[a]))
		if cl == nil {
			cl = &packed[T]{agent: a}
			p.calls[a] = append(p.calls[a], cl)
			p.room[a]--
		}
		cl.sessions = append(cl.sessions, id)
		cl.items = append(cl.items, items[a]...)
	}
	return true
}

// each returns the calls in agent order, a call's own order kept.
func (p *packer[T]) each() []*packed[T] {
	var out []*packed[T]
	for _, a := range sortedAgents(p.calls) {
		out = append(out, p.calls[a]...)
	}
	return out
}
