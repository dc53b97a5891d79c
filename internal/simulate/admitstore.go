package simulate

import (
	"context"
	"errors"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// fixedCluster is what admission reads of a simulation's store. The
// group, its policies and the agents are stored before the first
// submission, and what admission reads of them (the group's settings,
// the policies, the agents' catalogs, devices and commands) never changes
// during a run, so each is read once rather than at every one of up to
// millions of submissions. Sessions are created in the store itself,
// where the pending caps are counted.
type fixedCluster struct {
	store.Store
	groups   map[string]domain.ResourceGroup
	policies map[domain.PolicyScope]map[string]policyRead
	agents   map[string][]domain.Agent
}

// policyRead remembers a missing policy as well as a found one.
type policyRead struct {
	p   domain.Policy
	err error
}

func (f *fixedCluster) GetResourceGroup(ctx context.Context, name string) (domain.ResourceGroup, error) {
	if g, ok := f.groups[name]; ok {
		return g, nil
	}
	g, err := f.Store.GetResourceGroup(ctx, name)
	if err != nil {
		return g, err
	}
	if f.groups == nil {
		f.groups = map[string]domain.ResourceGroup{}
	}
	f.groups[name] = g
	return g, nil
}

func (f *fixedCluster) GetPolicy(ctx context.Context, scope domain.PolicyScope, name string) (domain.Policy, error) {
	if r, ok := f.policies[scope][name]; ok {
		return r.p, r.err
	}
	p, err := f.Store.GetPolicy(ctx, scope, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return p, err
	}
	if f.policies == nil {
		f.policies = map[domain.PolicyScope]map[string]policyRead{}
	}
	if f.policies[scope] == nil {
		f.policies[scope] = map[string]policyRead{}
	}
	f.policies[scope][name] = policyRead{p, err}
	return p, err
}

// ListAgents keeps a group's agents; other filters (designated agents)
// go to the store. Every caller shares the one list: admission only reads
// it (copying a thousand agents at each submission was a tenth of a
// run's admission time), and its capacity bounds an append to a copy.
func (f *fixedCluster) ListAgents(ctx context.Context, flt store.AgentFilter) ([]domain.Agent, error) {
	if flt.Group == "" || len(flt.IDs) > 0 || len(flt.Statuses) > 0 || !flt.SilentSince.IsZero() {
		return f.Store.ListAgents(ctx, flt)
	}
	if as, ok := f.agents[flt.Group]; ok {
		return as[:len(as):len(as)], nil
	}
	as, err := f.Store.ListAgents(ctx, flt)
	if err != nil {
		return nil, err
	}
	if f.agents == nil {
		f.agents = map[string][]domain.Agent{}
	}
	f.agents[flt.Group] = as
	return as[:len(as):len(as)], nil
}
