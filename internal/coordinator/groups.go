package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// GroupDefaults fill what a resource group leaves unset: max_retries when
// zero, and a residence bound for a status whose bound is zero.
type GroupDefaults struct {
	MaxRetries int
	Timeouts   domain.Timeouts
}

// groups indexes resource groups by name, with the shared defaults for
// what a group leaves unset.
type groups struct {
	m map[string]domain.ResourceGroup
	d *GroupDefaults
}

func (g groups) maxRetries(name string) int {
	if r := g.m[name].MaxRetries; r > 0 {
		return r
	}
	if g.d != nil && g.d.MaxRetries > 0 {
		return g.d.MaxRetries
	}
	return domain.DefaultMaxRetries
}

func (g groups) timeout(name string, s domain.SessionStatus) time.Duration {
	grp, ok := g.m[name]
	if !ok {
		return domain.DefaultTimeouts().For(s)
	}
	if t := grp.Timeouts.For(s); t > 0 {
		return t
	}
	if g.d != nil {
		return g.d.Timeouts.For(s)
	}
	return 0
}

func (c *Coordinator) groups(ctx context.Context) (groups, error) {
	list, err := c.store.ListResourceGroups(ctx)
	if err != nil {
		return groups{}, fmt.Errorf("list resource groups: %w", err)
	}
	gs := groups{m: make(map[string]domain.ResourceGroup, len(list)), d: c.defaults.Load()}
	for _, g := range list {
		gs.m[g.Name] = g
	}
	return gs, nil
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
