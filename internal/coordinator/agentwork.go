package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// fanOut follows the sessions of one handler run across its agent calls:
// a session's result is known once every call it waits on has finished.
type fanOut struct {
	order   map[domain.SessionID]int
	waiting map[domain.SessionID]int
	targets []store.SessionWithKernels
	// answered holds, per session, the finished call to each of its agents.
	answered map[domain.SessionID]map[domain.AgentID]*agentCall
}

func newFanOut() *fanOut {
	return &fanOut{order: map[domain.SessionID]int{}, waiting: map[domain.SessionID]int{},
		answered: map[domain.SessionID]map[domain.AgentID]*agentCall{}}
}

// call is the finished call that carried session id's work to agent.
func (f *fanOut) call(id domain.SessionID, agent domain.AgentID) *agentCall {
	return f.answered[id][agent]
}

// err is that call's error; nil when there was none.
func (f *fanOut) err(id domain.SessionID, agent domain.AgentID) error {
	if cl := f.call(id, agent); cl != nil {
		return cl.err
	}
	return nil
}

// add makes t wait on calls to n agents.
func (f *fanOut) add(t store.SessionWithKernels, n int) {
	f.order[t.Session.ID] = len(f.targets)
	f.targets = append(f.targets, t)
	f.waiting[t.Session.ID] = n
}

// done marks calls finished and returns the sessions that now have all
// their answers, in the order they were added.
func (f *fanOut) done(calls []*agentCall) []store.SessionWithKernels {
	var idx []int
	for _, cl := range calls {
		for _, id := range cl.sessions {
			if f.answered[id] == nil {
				f.answered[id] = map[domain.AgentID]*agentCall{}
			}
			f.answered[id][cl.agent] = cl
			f.waiting[id]--
			if f.waiting[id] == 0 {
				idx = append(idx, f.order[id])
			}
		}
	}
	slices.Sort(idx)
	out := make([]store.SessionWithKernels, len(idx))
	for i, j := range idx {
		out[i] = f.targets[j]
	}
	return out
}

// kernelAgents lists, sorted, the agents of t's kernels that pick selects.
func kernelAgents(t store.SessionWithKernels, pick func(domain.Kernel) bool) []domain.AgentID {
	var out []domain.AgentID
	for _, k := range t.Kernels {
		if k.Agent != "" && pick(k) && !slices.Contains(out, k.Agent) {
			out = append(out, k.Agent)
		}
	}
	slices.Sort(out)
	return out
}

// planned is a handler run's targets sorted by what is done with them:
// now are applied at once with res (held to their bound alone, waiting on
// an isolated agent, or with nothing to ask an agent); the rest are
// packed into calls, and fan follows them to their results.
type planned[T any] struct {
	now  []store.SessionWithKernels
	res  Result
	pack *packer[T]
	fan  *fanOut
}

// calls makes one agent call of each packed batch, do asking its agent
// for its items.
func (p planned[T]) calls(do func(ctx context.Context, agent domain.AgentID, items []T) error) []*agentCall {
	var calls []*agentCall
	for _, pc := range p.pack.each() {
		calls = append(calls, &agentCall{agent: pc.agent, sessions: pc.sessions, do: func(ctx context.Context) error {
			return do(ctx, pc.agent, pc.items)
		}})
	}
	return calls
}

// handlerTargets reads what a handler run works on: its targets, which
// narrow (when given) may cut down, and the resource groups. No targets
// and no error is nothing to do, and then the groups are not read.
func (c *Coordinator) handlerTargets(ctx context.Context, h domain.LifecycleHandler,
	narrow func(context.Context, []store.SessionWithKernels) ([]store.SessionWithKernels, error),
) ([]store.SessionWithKernels, groups, error) {
	// A handler that last found no session in its statuses looks again
	// only once the feed says one moved into them (touched.go): with
	// nothing to do, a cycle's three listings were most of its reads.
	moved, upTo, err := c.touched.movedInto(ctx, c.store, h.Name, h.TargetSession, c.clock.Now(), c.conf().ChangeRetention)
	if err != nil {
		return nil, groups{}, err
	}
	if !moved {
		c.touched.done(h.Name, upTo)
		return nil, groups{}, nil
	}
	targets, err := c.targets(ctx, h)
	if err == nil && len(targets) == 0 {
		c.touched.done(h.Name, upTo)
	} else {
		c.touched.forget(h.Name)
	}
	if err == nil && narrow != nil {
		targets, err = narrow(ctx, targets)
	}
	if err != nil || len(targets) == 0 {
		return nil, groups{}, err
	}
	gs, err := c.groups(ctx)
	if err != nil {
		return nil, groups{}, err
	}
	return targets, gs, nil
}

// plan sorts targets for a handler whose calls are of kind: work says
// what a target needs from which agents, or false when the handler does
// not attempt it. A target whose agents have no call free is left out,
// and so is one a call under way already carries: the next run takes it
// once that call's result is recorded.
func plan[T any](c *Coordinator, kind callKind, targets []store.SessionWithKernels,
	work func(store.SessionWithKernels) (map[domain.AgentID][]T, bool)) planned[T] {
	p := planned[T]{pack: newPacker[T](c, kind), fan: newFanOut()}
	for _, t := range targets {
		if c.calls.inCall(kind, t.Session.ID) {
			continue // its call under way reports it
		}
		items, attempt := work(t)
		if !attempt {
			p.now = append(p.now, t)
			continue
		}
		agents := sortedAgents(items)
		switch note := c.calls.isolatedAmong(agents); {
		case note != "":
			p.now = append(p.now, t)
			p.res.Skipped = append(p.res.Skipped, Note{Session: t.Session.ID, Message: note})
		case len(agents) == 0:
			p.now = append(p.now, t)
			p.res.Successes = append(p.res.Successes, t.Session.ID)
		case p.pack.add(t.Session.ID, items):
			p.fan.add(t, len(agents))
		}
	}
	return p
}

// PrepareSessions asks agents to make the images of scheduled and
// preparing sessions present, one call per agent for all its images,
// however many sessions. Asking again is safe, which is how a lost
// image_pull_finished is recovered: the agent answers that the image is
// ready and the kernels move on.
func (c *Coordinator) PrepareSessions(ctx context.Context) error {
	defer c.metrics.run(domain.HandlerPrepareSessions, time.Now())
	h := lifecycle(domain.HandlerPrepareSessions)
	// Job members wait for their gang (jobs.go).
	targets, gs, err := c.handlerTargets(ctx, h, c.permit)
	if err != nil || len(targets) == 0 {
		return err
	}
	wanted := func(k domain.Kernel) bool { return slices.Contains(h.TargetKernel, k.Status) }
	p := plan(c, callPull, targets, func(t store.SessionWithKernels) (map[domain.AgentID][]string, bool) {
		images := map[domain.AgentID][]string{}
		for _, k := range t.Kernels {
			if k.Agent != "" && wanted(k) && !slices.Contains(images[k.Agent], k.Image) {
				images[k.Agent] = append(images[k.Agent], k.Image)
			}
		}
		return images, works(h, t)
	})
	fan := p.fan
	if err := c.apply(ctx, h, handlerPolicy{}, p.now, p.res, gs); err != nil {
		return err
	}
	// Each call fills its own slot; settle reads it once the call is done.
	var calls []*agentCall
	slot := map[*agentCall]*map[string]PullState{}
	for _, pc := range p.pack.each() {
		var want []string
		for _, img := range pc.items {
			if !slices.Contains(want, img) {
				want = append(want, img)
			}
		}
		out := new(map[string]PullState)
		cl := &agentCall{agent: pc.agent, sessions: pc.sessions, do: func(ctx context.Context) error {
			st, err := c.agents.CheckAndPull(ctx, pc.agent, want)
			*out = st
			return err
		}}
		slot[cl] = out
		calls = append(calls, cl)
	}
	return c.dispatch(ctx, callPull, calls, func(ctx context.Context, done []*agentCall) error {
		var res Result
		var ready []domain.Kernel
		settled := fan.done(done)
		for _, t := range settled {
			var failed []string
			for _, k := range t.Kernels {
				if k.Agent == "" || !wanted(k) {
					continue
				}
				cl := fan.call(t.Session.ID, k.Agent)
				if cl.err != nil {
					failed = append(failed, fmt.Sprintf("agent %s: %v", k.Agent, cl.err))
					continue
				}
				st := (*slot[cl])[k.Image]
				switch {
				case st.Failed != "":
					failed = append(failed, fmt.Sprintf("pull of %s on %s failed: %s", k.Image, k.Agent, st.Failed))
				case st.Ready:
					ready = append(ready, k)
				}
			}
			if len(failed) > 0 {
				res.Failures = append(res.Failures, Note{Session: t.Session.ID, Message: strings.Join(failed, "; ")})
			} else {
				res.Successes = append(res.Successes, t.Session.ID)
			}
		}
		if err := c.apply(ctx, h, handlerPolicy{}, settled, res, gs); err != nil {
			return err
		}
		return c.markPrepared(ctx, ready)
	})
}

// markPrepared moves kernels whose image is present to PREPARED.
func (c *Coordinator) markPrepared(ctx context.Context, ready []domain.Kernel) error {
	now := c.clock.Now()
	for _, k := range ready {
		_, err := c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID,
			From: []domain.KernelStatus{domain.KernelScheduled, domain.KernelPreparing, domain.KernelPulling},
			To:   domain.KernelPrepared, Reason: "image present", Now: now})
		if err != nil && !errors.Is(err, store.ErrGuardFailed) {
			return fmt.Errorf("mark %s prepared: %w", k.ID, err)
		}
	}
	if len(ready) > 0 {
		c.Mark()
	}
	return nil
}

func sortedAgents[V any](m map[domain.AgentID]V) []domain.AgentID {
	out := make([]domain.AgentID, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// StartSessions asks agents to create the kernels of prepared sessions:
// one call per agent with every kernel it is to start, all agents at once.
func (c *Coordinator) StartSessions(ctx context.Context) error {
	defer c.metrics.run(domain.HandlerStartSessions, time.Now())
	h := lifecycle(domain.HandlerStartSessions)
	targets, gs, err := c.handlerTargets(ctx, h, nil)
	if err != nil || len(targets) == 0 {
		return err
	}
	// A PREPARED session is always attempted, even with no PREPARED kernel
	// left: its kernels were created by an attempt whose success was never
	// recorded (the manager died, or the agent's answer was lost, after the
	// agent had acted), and the attempt now has nothing to create — it
	// succeeds, and the promotions carry the session on.
	var attempt []domain.SessionID
	attempted := make(map[domain.SessionID]bool, len(targets))
	for _, t := range targets {
		if works(h, t) || t.Session.Status == domain.SessionPrepared {
			attempt = append(attempt, t.Session.ID)
			attempted[t.Session.ID] = true
		}
	}
	// Targets come from a listing, which leaves out the sessions' command
	// and environment; only the sessions started now read theirs.
	specs, err := c.store.SessionSpecs(ctx, attempt)
	if err != nil {
		return fmt.Errorf("%s: read session specs: %w", h.Name, err)
	}
	p := plan(c, callCreate, targets, func(t store.SessionWithKernels) (map[domain.AgentID][]KernelSpec, bool) {
		if !attempted[t.Session.ID] {
			return nil, false
		}
		return c.kernelSpecs(t, specs[t.Session.ID]), true
	})
	fan := p.fan
	if err := c.apply(ctx, h, handlerPolicy{}, p.now, p.res, gs); err != nil {
		return err
	}
	return c.dispatch(ctx, callCreate, p.calls(c.agents.CreateKernels), func(ctx context.Context, done []*agentCall) error {
		var res Result
		settled := fan.done(done)
		for _, t := range settled {
			var failed []string
			impossible := false
			for _, agent := range kernelAgents(t, func(k domain.Kernel) bool { return k.Status == domain.KernelPrepared }) {
				var kerrs []error
				for _, k := range t.Kernels {
					if k.Agent != agent || k.Status != domain.KernelPrepared {
						continue
					}
					if err := kernelErr(fan.err(t.Session.ID, agent), k.ID); err != nil && !slices.Contains(kerrs, err) {
						kerrs = append(kerrs, err)
					}
				}
				if err := errors.Join(kerrs...); err != nil {
					failed = append(failed, fmt.Sprintf("create kernels on %s: %v", agent, err))
					impossible = impossible || errors.Is(err, ErrImpossible)
				}
			}
			if len(failed) > 0 {
				res.Failures = append(res.Failures, Note{Session: t.Session.ID, Message: strings.Join(failed, "; "),
					Impossible: impossible})
				continue
			}
			res.Successes = append(res.Successes, t.Session.ID)
		}
		return c.apply(ctx, h, handlerPolicy{}, settled, res, gs)
	})
}

// kernelSpecs are the specs of t's kernels still to create, by agent.
func (c *Coordinator) kernelSpecs(t store.SessionWithKernels, spec store.SessionSpec) map[domain.AgentID][]KernelSpec {
	hosts := make([]string, len(t.Kernels))
	agents := make([]domain.AgentID, len(t.Kernels))
	for i, k := range t.Kernels {
		hosts[i] = fmt.Sprintf("%s%d", k.ClusterRole, k.ClusterIdx)
		agents[i] = k.Agent
	}
	start := c.hooks.For(t.Session.Type).OnStart(t.Session)
	byAgent := map[domain.AgentID][]KernelSpec{}
	for _, k := range t.Kernels {
		if k.Status != domain.KernelPrepared || k.Agent == "" {
			continue
		}
		byAgent[k.Agent] = append(byAgent[k.Agent], KernelSpec{KernelSpec: domain.KernelSpec{
			Kernel: k.ID, Session: t.Session.ID, Image: k.Image,
			ClusterRole: k.ClusterRole, ClusterIdx: k.ClusterIdx, ClusterSize: len(t.Kernels), ClusterHosts: hosts,
			Command: spec.Command, Env: spec.Env, Devices: k.Devices, Serves: start.Serves,
		}, Slots: k.Requested, ClusterAgents: agents, TimeLimit: start.TimeLimit})
	}
	return byAgent
}

// TerminateSessions destroys the live kernels of terminating sessions,
// every agent at once and the kernels of one agent several at a time. A
// kernel counts as gone only when its agent says so; until then the
// session is retried, and only the TERMINATING bound forces the end.
func (c *Coordinator) TerminateSessions(ctx context.Context) error {
	defer c.metrics.run(domain.HandlerTerminateSessions, time.Now())
	h := lifecycle(domain.HandlerTerminateSessions)
	pol := handlerPolicy{retryUntilExpiry: true}
	targets, gs, err := c.handlerTargets(ctx, h, nil)
	if err != nil || len(targets) == 0 {
		return err
	}
	live := func(k domain.Kernel) bool { return !k.Status.Terminal() && k.Status.HoldsResources() }
	p := plan(c, callDestroy, targets, func(t store.SessionWithKernels) (map[domain.AgentID][]domain.KernelID, bool) {
		kernels := map[domain.AgentID][]domain.KernelID{}
		for _, k := range t.Kernels {
			if k.Agent != "" && live(k) {
				kernels[k.Agent] = append(kernels[k.Agent], k.ID)
			}
		}
		return kernels, works(h, t)
	})
	fan := p.fan
	if err := c.apply(ctx, h, pol, p.now, p.res, gs); err != nil {
		return err
	}
	return c.dispatch(ctx, callDestroy, p.calls(c.destroyOn), func(ctx context.Context, done []*agentCall) error {
		now := c.clock.Now()
		var res Result
		settled := fan.done(done)
		for _, t := range settled {
			var failed []string
			for _, k := range t.Kernels {
				if k.Agent == "" || !live(k) {
					continue
				}
				if err := kernelErr(fan.err(t.Session.ID, k.Agent), k.ID); err != nil {
					failed = append(failed, fmt.Sprintf("destroy %s on %s: %v", k.ID, k.Agent, err))
					continue
				}
				_, err := c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: nonTerminal(),
					To: domain.KernelTerminated, Reason: "destroyed", Now: now})
				if err != nil && !errors.Is(err, store.ErrGuardFailed) {
					return fmt.Errorf("mark %s terminated: %w", k.ID, err)
				}
			}
			if len(failed) > 0 {
				res.Failures = append(res.Failures, Note{Session: t.Session.ID, Message: strings.Join(failed, "; ")})
			} else {
				res.Successes = append(res.Successes, t.Session.ID)
			}
		}
		return c.apply(ctx, h, pol, settled, res, gs)
	})
}

// destroyOn destroys kernels on one agent, destroysPerAgent at a time (one
// at a time when calls are serial), and says which failed as KernelErrors.
func (c *Coordinator) destroyOn(ctx context.Context, agent domain.AgentID, kernels []domain.KernelID) error {
	width := destroysPerAgent
	if c.serial() {
		width = 1
	}
	var mu sync.Mutex
	failed := KernelErrors{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, width)
	for _, k := range kernels {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := c.agents.DestroyKernel(ctx, agent, k, false); err != nil {
				mu.Lock()
				failed[k] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) == 0 {
		return nil
	}
	if len(failed) == len(kernels) {
		// One cause for all, as a timed-out call: keep it as the call's,
		// so a timeout isolates the agent.
		for _, err := range failed {
			if timedOut(err) {
				return err
			}
		}
	}
	return failed
}
