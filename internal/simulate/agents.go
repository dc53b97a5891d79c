package simulate

// This file is the only one that speaks the coordinator's agent port
// (coordinator.Agents, KernelSpec, PullState), the kernel state engine's
// event type and the runtime's event type, so a rename of those types
// touches it alone.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// destroyGrace is the agent daemon's default grace for a polite stop.
const destroyGrace = 10 * time.Second

// fleet is every simulated agent, called in-process by the coordinator in
// place of the agent RPC. Calls and clock callbacks all run on the
// simulation's goroutine; only the runtimes' event sinks run on their
// outbox goroutines, so an agent's queue has a lock and nothing else does.
type fleet struct {
	reg    *domain.Registry
	byID   map[domain.AgentID]*simAgent
	dirty  []*simAgent
	events []domain.KernelEvent
}

type simAgent struct {
	id      domain.AgentID
	idx     int
	epoch   int64
	rt      *sim.Runtime
	isDirty bool

	mu    sync.Mutex
	queue []domain.KernelEvent
}

func newFleet(reg *domain.Registry) *fleet {
	return &fleet{reg: reg, byID: map[domain.AgentID]*simAgent{}}
}

// add builds the sim runtime of an agent registered under epoch. Pulls,
// creations and destroys take no time; a kernel runs for the duration its
// session's image says (exit:N after SOKOVAN_EXIT_AFTER seconds).
func (f *fleet) add(id domain.AgentID, epoch int64, clock *sim.ManualClock, seed uint64) error {
	a := &simAgent{id: id, idx: len(f.byID), epoch: epoch}
	rt, err := sim.New(sim.Config{Seed: seed, Clock: agentClock{clock, f, a}, Sink: a.sink})
	if err != nil {
		return err
	}
	a.rt = rt
	f.byID[id] = a
	return nil
}

// agentClock notes which agent a timer belongs to, so only the runtimes
// that may have emitted events are flushed after the clock moves.
type agentClock struct {
	*sim.ManualClock
	f *fleet
	a *simAgent
}

func (c agentClock) AfterFunc(d time.Duration, fn func()) sim.Timer {
	return c.ManualClock.AfterFunc(d, func() {
		c.f.touch(c.a)
		fn()
	})
}

func (f *fleet) touch(a *simAgent) {
	if !a.isDirty {
		a.isDirty = true
		f.dirty = append(f.dirty, a)
	}
}

func (a *simAgent) sink(ev domain.KernelEvent) {
	switch ev.Kind {
	case domain.EventImagePullStarted, domain.EventImagePullFinished, domain.EventImagePullFailed,
		domain.EventKernelStarted, domain.EventKernelTerminated:
	default:
		return
	}
	out := ev
	// What the agent daemon does before an event leaves it: stamp the
	// incarnation, and give an ending a message when the runtime gave none.
	out.Agent, out.Epoch = a.id, a.epoch
	if out.Message == "" && out.Kind == domain.EventKernelTerminated {
		out.Message = string(out.Reason)
	}
	a.mu.Lock()
	a.queue = append(a.queue, out)
	a.mu.Unlock()
}

// collect waits for the touched runtimes to hand over their events and
// queues them in agent order, each agent's in the order it emitted them.
// All of them happened at the current virtual time, so this order is as
// true as any, and it does not depend on goroutine scheduling.
func (f *fleet) collect(ctx context.Context) error {
	if len(f.dirty) == 0 {
		return nil
	}
	slices.SortFunc(f.dirty, func(a, b *simAgent) int { return a.idx - b.idx })
	for _, a := range f.dirty {
		if err := a.rt.Flush(ctx); err != nil {
			return err
		}
		a.mu.Lock()
		f.events = append(f.events, a.queue...)
		a.queue = a.queue[:0]
		a.mu.Unlock()
		a.isDirty = false
	}
	f.dirty = f.dirty[:0]
	return nil
}

// deliver hands the queued events to the coordinator, as the gateway does
// with an agent's batch. It reports whether there were any.
func (f *fleet) deliver(ctx context.Context, c *coordinator.Coordinator) (bool, error) {
	if err := f.collect(ctx); err != nil {
		return false, err
	}
	if len(f.events) == 0 {
		return false, nil
	}
	evs := f.events
	f.events = nil
	return true, c.HandleEvents(ctx, evs)
}

func (f *fleet) agent(id domain.AgentID) (*simAgent, error) {
	a := f.byID[id]
	if a == nil {
		return nil, fmt.Errorf("no simulated agent %s", id)
	}
	f.touch(a)
	return a, nil
}

// CheckAndPull pulls at once: every image is ready or failed on return.
func (f *fleet) CheckAndPull(ctx context.Context, id domain.AgentID, images []string) (map[string]coordinator.PullState, error) {
	a, err := f.agent(id)
	if err != nil {
		return nil, err
	}
	out := make(map[string]coordinator.PullState, len(images))
	for _, img := range images {
		if err := a.rt.Pull(ctx, img); err != nil {
			out[img] = coordinator.PullState{Failed: err.Error()}
			continue
		}
		out[img] = coordinator.PullState{Ready: true}
	}
	return out, nil
}

// CreateKernels starts kernels as the agent daemon does, the spec passed
// on whole; the slots need no trip through the wire's text.
func (f *fleet) CreateKernels(ctx context.Context, id domain.AgentID, specs []coordinator.KernelSpec) error {
	a, err := f.agent(id)
	if err != nil {
		return err
	}
	for _, k := range specs {
		spec := runtime.Spec{KernelSpec: k.KernelSpec, Slots: k.Slots, Registry: f.reg}
		if k.ClusterIdx < len(k.ClusterHosts) {
			spec.Hostname = k.ClusterHosts[k.ClusterIdx]
		}
		if err := a.rt.Create(ctx, spec); err != nil {
			return err
		}
	}
	return nil
}

// DestroyKernel stops a kernel at once (sim destroys take no time).
func (f *fleet) DestroyKernel(ctx context.Context, id domain.AgentID, kernel domain.KernelID, forced bool) error {
	a, err := f.agent(id)
	if err != nil {
		return err
	}
	grace := destroyGrace
	if forced {
		grace = 0
	}
	return a.rt.Destroy(ctx, kernel, grace)
}

var _ coordinator.Agents = (*fleet)(nil)
