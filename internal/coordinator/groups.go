package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// GroupDefaults are the shared settings' group_defaults: max_retries for
// a group whose own is zero, and the residence bounds a new group starts
// with (NewGroupTimeouts). A bound of zero here is not given, as every
// zero in the shared settings, and leaves the built-in one.
//
// A group's own bound of zero is no bound ("0s" in the API) and is never
// filled from these: a bound a user switched off must stay off.
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
	return grp.Timeouts.For(s)
}

// NewGroupTimeouts are the residence bounds of a group created now for
// the statuses it leaves out: the shared group_defaults' where given, the
// built-in ones otherwise.
func (c *Coordinator) NewGroupTimeouts() domain.Timeouts {
	t := domain.DefaultTimeouts()
	d := c.defaults.Load()
	for _, p := range []struct {
		to   *time.Duration
		from time.Duration
	}{
		{&t.Pending, d.Timeouts.Pending}, {&t.Scheduled, d.Timeouts.Scheduled}, {&t.Preparing, d.Timeouts.Preparing},
		{&t.Prepared, d.Timeouts.Prepared}, {&t.Creating, d.Timeouts.Creating}, {&t.Terminating, d.Timeouts.Terminating},
	} {
		if p.from > 0 {
			*p.to = p.from
		}
	}
	return t
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
