package agentgw

import (
	"context"
	"errors"
	"fmt"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
)

var (
	_ coordinator.Agents = (*Agents)(nil)
	_ coordinator.Prober = (*Agents)(nil)
)

// Agents is the coordinator's port to agents, carried over the wire by an
// agentrpc.AgentClient. The coordinator owns its port's types and the
// wire owns its own, so neither imports the other; this is where they meet.
type Agents struct {
	client *agentrpc.AgentClient
	// slots formats kernels' requested resources for the wire.
	slots *domain.Registry
}

// NewAgents returns the port over client; slots is the manager's slot
// registry.
func NewAgents(client *agentrpc.AgentClient, slots *domain.Registry) *Agents {
	return &Agents{client: client, slots: slots}
}

// CheckAndPull implements coordinator.Agents.
func (a *Agents) CheckAndPull(ctx context.Context, agent domain.AgentID, images []string) (map[string]coordinator.PullState, error) {
	states, err := a.client.CheckAndPull(ctx, agent, images)
	if err != nil {
		return nil, err
	}
	out := make(map[string]coordinator.PullState, len(states))
	for img, st := range states {
		out[img] = coordinator.PullState{Ready: st.Ready, Failed: st.Failed}
	}
	return out, nil
}

// CreateKernels implements coordinator.Agents.
func (a *Agents) CreateKernels(ctx context.Context, agent domain.AgentID, specs []coordinator.KernelSpec) error {
	wire := make([]agentrpc.KernelSpec, len(specs))
	hosts := map[domain.AgentID]string{}
	for i, s := range specs {
		wire[i] = agentrpc.KernelSpec{KernelSpec: s.KernelSpec, Slots: a.slots.FormatSlots(s.Slots),
			TimeLimitMS: s.TimeLimit.Milliseconds()}
		addrs, err := a.clusterAddrs(ctx, s.ClusterAgents, hosts)
		if err != nil {
			return err
		}
		wire[i].ClusterAddrs = addrs
	}
	failed, err := a.client.CreateKernels(ctx, agent, wire)
	if err != nil {
		return impossible(err)
	}
	if len(failed) == 0 {
		return nil
	}
	out := make(coordinator.KernelErrors, len(failed))
	for k, err := range failed {
		out[k] = impossible(err)
	}
	return out
}

// clusterAddrs is where each of a session's kernels is reached, by cluster
// index: the host of the agent it is placed on. Kernels of a multi-node
// session on different hosts find each other there. A kernel alone needs
// none, and an agent whose address cannot be read fails the create, to
// be retried, rather than start kernels that cannot find their peers.
func (a *Agents) clusterAddrs(ctx context.Context, agents []domain.AgentID, known map[domain.AgentID]string) ([]string, error) {
	if len(agents) < 2 {
		return nil, nil
	}
	out := make([]string, len(agents))
	for i, id := range agents {
		h, ok := known[id]
		if !ok {
			var err error
			if h, err = a.client.Host(ctx, id); err != nil {
				return nil, fmt.Errorf("cluster addresses: %w", err)
			}
			known[id] = h
		}
		out[i] = h
	}
	return out, nil
}

// impossible marks the agent's verdict on a spec, not a fault of the
// call: asking it again gets the same answer.
func impossible(err error) error {
	if errors.Is(err, agentrpc.ErrInvalidSpec) {
		return fmt.Errorf("%w: %w", coordinator.ErrImpossible, err)
	}
	return err
}

// Probe implements coordinator.Prober.
func (a *Agents) Probe(ctx context.Context, agent domain.AgentID) error {
	return a.client.Probe(ctx, agent)
}

// DestroyKernel implements coordinator.Agents.
func (a *Agents) DestroyKernel(ctx context.Context, agent domain.AgentID, kernel domain.KernelID, forced bool) error {
	return a.client.DestroyKernel(ctx, agent, kernel, forced)
}
