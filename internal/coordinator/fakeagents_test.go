package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// fakeAgents is an in-process stand-in for agents, used only to inject
// faults at the coordinator's edge: RPC errors, unreachable agents, and
// agent events that are dropped, duplicated, delayed or reordered. Events
// wait in a queue until the test delivers them, so tests need no sleeps.
type fakeAgents struct {
	mu     sync.Mutex
	rng    *rand.Rand
	now    func() time.Time
	pulled map[domain.AgentID]map[string]bool
	// kernels that exist on agents: agent, and whether they still run.
	kernels map[domain.KernelID]*fakeKernel
	queue   []domain.KernelEvent
	epochs  map[domain.AgentID]int64

	// Faults, changeable by tests between steps.
	callErr float64 // chance an RPC fails
	drop    float64 // chance an event is lost
	dup     float64 // chance an event is delivered twice
	reorder bool    // deliver the queue in random order
	down    map[domain.AgentID]bool
	// failCreate makes every CreateKernels call fail; refuseCreate only
	// those to the agents it names.
	failCreate   bool
	refuseCreate map[domain.AgentID]bool
	// invalidSpec makes CreateKernels on the agents it names refuse the
	// specs as a real agent refuses invalid ones (agentgw wraps that as
	// coordinator.ErrImpossible).
	invalidSpec map[domain.AgentID]bool
	// loseCreateAnswer makes CreateKernels create the kernels, then fail,
	// as a call whose answer is lost (or whose caller dies) would.
	loseCreateAnswer bool
	// failDestroy makes every DestroyKernel call fail.
	failDestroy bool
	// stallPull makes pulls never finish (nor fail).
	stallPull bool
	// forced lists the kernels destroyed without grace, in call order.
	forced []domain.KernelID
	// hang makes every call to these agents block until its deadline.
	hang map[domain.AgentID]bool
	// specs holds what each kernel was created with, as the agent got it.
	specs map[domain.KernelID]coordinator.KernelSpec
	// calls counts calls by "kind:agent" (pull, create, destroy, probe),
	// and sizes lists each create call's kernel count by agent.
	calls map[string]int
	sizes map[domain.AgentID][]int
}

type fakeKernel struct {
	agent   domain.AgentID
	image   string
	running bool
}

func newFakeAgents(seed uint64, now func() time.Time) *fakeAgents {
	return &fakeAgents{
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: now,
		pulled: map[domain.AgentID]map[string]bool{}, kernels: map[domain.KernelID]*fakeKernel{},
		epochs: map[domain.AgentID]int64{}, down: map[domain.AgentID]bool{}, hang: map[domain.AgentID]bool{},
		refuseCreate: map[domain.AgentID]bool{}, invalidSpec: map[domain.AgentID]bool{},
		specs: map[domain.KernelID]coordinator.KernelSpec{}, calls: map[string]int{}, sizes: map[domain.AgentID][]int{},
	}
}

var errInjected = errors.New("injected fault")

func (f *fakeAgents) fail(agent domain.AgentID) error {
	if f.down[agent] {
		return fmt.Errorf("agent %s unreachable: %w", agent, errInjected)
	}
	if f.callErr > 0 && f.rng.Float64() < f.callErr {
		return fmt.Errorf("call to %s: %w", agent, errInjected)
	}
	return nil
}

func knownImage(img string) bool {
	if img == "sleep" {
		return true
	}
	if n, ok := strings.CutPrefix(img, "exit:"); ok {
		code, err := strconv.Atoi(n)
		return err == nil && code >= 0 && code <= 255
	}
	return false
}

// wait blocks a call to a hanging agent until the caller's deadline, as an
// agent that accepted the connection but never answers would.
func (f *fakeAgents) wait(ctx context.Context, agent domain.AgentID) error {
	f.mu.Lock()
	hang := f.hang[agent]
	f.mu.Unlock()
	if !hang {
		return nil
	}
	<-ctx.Done()
	return fmt.Errorf("call to %s: %w", agent, ctx.Err())
}

func (f *fakeAgents) emit(ev domain.KernelEvent) {
	ev.Epoch = f.epochs[ev.Agent]
	ev.At = f.now()
	f.queue = append(f.queue, ev)
}

// CheckAndPull answers "pulling" the first time it sees an image on an
// agent (and queues the pull events), "ready" after.
func (f *fakeAgents) CheckAndPull(ctx context.Context, agent domain.AgentID, images []string) (map[string]coordinator.PullState, error) {
	f.count("pull", agent)
	if err := f.wait(ctx, agent); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(agent); err != nil {
		return nil, err
	}
	out := map[string]coordinator.PullState{}
	if f.pulled[agent] == nil {
		f.pulled[agent] = map[string]bool{}
	}
	for _, img := range images {
		switch {
		case !knownImage(img):
			out[img] = coordinator.PullState{Failed: fmt.Sprintf("image %q is not in the catalog", img)}
			f.emit(domain.KernelEvent{Kind: domain.EventImagePullFailed, Agent: agent, Image: img, Message: "not in catalog"})
		case f.stallPull:
			out[img] = coordinator.PullState{}
		case f.pulled[agent][img]:
			out[img] = coordinator.PullState{Ready: true}
		default:
			f.pulled[agent][img] = true
			f.emit(domain.KernelEvent{Kind: domain.EventImagePullStarted, Agent: agent, Image: img})
			f.emit(domain.KernelEvent{Kind: domain.EventImagePullFinished, Agent: agent, Image: img})
			out[img] = coordinator.PullState{}
		}
	}
	return out, nil
}

func (f *fakeAgents) CreateKernels(ctx context.Context, agent domain.AgentID, specs []coordinator.KernelSpec) error {
	f.count("create", agent)
	f.mu.Lock()
	f.sizes[agent] = append(f.sizes[agent], len(specs))
	f.mu.Unlock()
	if err := f.wait(ctx, agent); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failCreate || f.refuseCreate[agent] {
		return fmt.Errorf("create on %s: %w", agent, errInjected)
	}
	if f.invalidSpec[agent] {
		return fmt.Errorf("%w: create on %s: invalid kernel spec: %w", coordinator.ErrImpossible, agent, errInjected)
	}
	if err := f.fail(agent); err != nil {
		return err
	}
	for _, s := range specs {
		if _, ok := f.kernels[s.Kernel]; ok {
			continue // idempotent
		}
		f.kernels[s.Kernel] = &fakeKernel{agent: agent, image: s.Image, running: true}
		f.specs[s.Kernel] = s
		f.emit(domain.KernelEvent{Kind: domain.EventKernelCreating, Agent: agent, Kernel: s.Kernel})
		f.emit(domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: agent, Kernel: s.Kernel, ContainerID: "c-" + string(s.Kernel)})
	}
	if f.loseCreateAnswer {
		return fmt.Errorf("create on %s: answer lost: %w", agent, errInjected)
	}
	return nil
}

func (f *fakeAgents) DestroyKernel(ctx context.Context, agent domain.AgentID, kernel domain.KernelID, forced bool) error {
	f.count("destroy", agent)
	if err := f.wait(ctx, agent); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failDestroy {
		return fmt.Errorf("destroy on %s: %w", agent, errInjected)
	}
	if err := f.fail(agent); err != nil {
		return err
	}
	if forced {
		f.forced = append(f.forced, kernel)
	}
	k, ok := f.kernels[kernel]
	if !ok || !k.running {
		return nil
	}
	k.running = false
	code := 143
	f.emit(domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: agent, Kernel: kernel, ExitCode: &code, Message: "destroyed"})
	return nil
}

// Probe answers as the agent's other calls do: not while it hangs or is
// down.
func (f *fakeAgents) Probe(ctx context.Context, agent domain.AgentID) error {
	f.count("probe", agent)
	if err := f.wait(ctx, agent); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[agent] {
		return fmt.Errorf("agent %s unreachable: %w", agent, errInjected)
	}
	return nil
}

func (f *fakeAgents) count(kind string, agent domain.AgentID) {
	f.mu.Lock()
	f.calls[kind+":"+string(agent)]++
	f.mu.Unlock()
}

// called is how many calls of kind agent has had.
func (f *fakeAgents) called(kind string, agent domain.AgentID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[kind+":"+string(agent)]
}

// exitKernels makes running exit:N kernels exit with N, as time passing
// would.
func (f *fakeAgents) exitKernels() {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]domain.KernelID, 0, len(f.kernels))
	for id := range f.kernels {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		k := f.kernels[id]
		n, ok := strings.CutPrefix(k.image, "exit:")
		if !ok || !k.running {
			continue
		}
		code, _ := strconv.Atoi(n)
		k.running = false
		f.emit(domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: k.agent, Kernel: id, ExitCode: &code, Message: "exited"})
	}
}

// exit makes one running kernel exit with code, as its program ending
// would.
func (f *fakeAgents) exit(id domain.KernelID, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.kernels[id]
	if !ok || !k.running {
		return
	}
	k.running = false
	f.emit(domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: k.agent, Kernel: id, ExitCode: &code, Message: "exited"})
}

// running lists the kernels alive on agents.
func (f *fakeAgents) running() map[domain.KernelID]domain.AgentID {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[domain.KernelID]domain.AgentID{}
	for id, k := range f.kernels {
		if k.running {
			out[id] = k.agent
		}
	}
	return out
}

// deliver hands queued events to the coordinator, with the configured
// losses, duplicates and reordering.
func (f *fakeAgents) deliver(ctx context.Context, c *coordinator.Coordinator) error {
	f.mu.Lock()
	evs := f.queue
	f.queue = nil
	var out []domain.KernelEvent
	for _, ev := range evs {
		if f.drop > 0 && f.rng.Float64() < f.drop {
			continue
		}
		out = append(out, ev)
		if f.dup > 0 && f.rng.Float64() < f.dup {
			out = append(out, ev)
		}
	}
	if f.reorder {
		f.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	f.mu.Unlock()
	for _, ev := range out {
		if err := c.HandleEvent(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}
