package codec

import (
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// UsageSlotRow is one line of the usage aggregate: what the kernels holding
// resources of one owner tuple hold of one slot, across all groups, and
// whether those sessions are in the group being scheduled.
type UsageSlotRow struct {
	User, Project, Domain string
	InGroup               bool
	Slot                  string
	Sum                   int64
}

// UsageCountRow is how many sessions of one owner tuple hold resources.
type UsageCountRow struct {
	User, Project, Domain string
	Count                 int
}

// BuildUsage folds the aggregate rows into the snapshot's per-user,
// per-project and per-domain usage, and the per-user usage inside the group
// that DRF reads.
func BuildUsage(reg *domain.Registry, slots []UsageSlotRow, counts []UsageCountRow) (framework.Usage, error) {
	u := framework.Usage{
		Users:      map[string]framework.Use{},
		Projects:   map[string]framework.Use{},
		Domains:    map[string]framework.Use{},
		GroupUsers: map[string]domain.Vec{},
	}
	use := func(m map[string]framework.Use, key string) framework.Use {
		x, ok := m[key]
		if !ok {
			x = framework.Use{Occupied: reg.NewVec()}
		}
		return x
	}
	for _, r := range slots {
		id, ok := reg.Lookup(r.Slot)
		if !ok {
			return u, &store.CorruptRowError{Table: "kernels", ID: "usage of user " + r.User, Column: "requested",
				Err: fmt.Errorf("slot %q: %w", r.Slot, domain.ErrUnknownSlot)}
		}
		for _, t := range []struct {
			m   map[string]framework.Use
			key string
		}{{u.Users, r.User}, {u.Projects, r.Project}, {u.Domains, r.Domain}} {
			x := use(t.m, t.key)
			x.Occupied[id] = domain.AddSat(x.Occupied[id], domain.Quantity(r.Sum))
			t.m[t.key] = x
		}
		if r.InGroup {
			v, ok := u.GroupUsers[r.User]
			if !ok {
				v = reg.NewVec()
				u.GroupUsers[r.User] = v
			}
			v[id] = domain.AddSat(v[id], domain.Quantity(r.Sum))
		}
	}
	for _, c := range counts {
		for _, t := range []struct {
			m   map[string]framework.Use
			key string
		}{{u.Users, c.User}, {u.Projects, c.Project}, {u.Domains, c.Domain}} {
			x := use(t.m, t.key)
			x.Active += c.Count
			t.m[t.key] = x
		}
	}
	return u, nil
}

// BuildPolicies sorts policies into the snapshot's maps by scope.
func BuildPolicies(ps []domain.Policy) framework.Policies {
	out := framework.Policies{
		Users:    map[string]domain.Policy{},
		Projects: map[string]domain.Policy{},
		Domains:  map[string]domain.Policy{},
	}
	for _, p := range ps {
		switch p.Scope {
		case domain.ScopeUser:
			out.Users[p.Name] = p
		case domain.ScopeProject:
			out.Projects[p.Name] = p
		case domain.ScopeDomain:
			out.Domains[p.Name] = p
		}
	}
	return out
}

// DependencyRow is one dependency edge with the state of its target.
type DependencyRow struct {
	Session, DependsOn string
	Status, Outcome    string
}

// AttachDependencies fills DependsOn of the given sessions from edges
// (which must be ordered by session, then target, for a stable result) and
// returns the state of every target.
func AttachDependencies(sessions []framework.PendingSession, edges []DependencyRow) (map[domain.SessionID]framework.DependencyState, error) {
	index := make(map[domain.SessionID]int, len(sessions))
	for i, s := range sessions {
		index[s.Session.ID] = i
	}
	states := make(map[domain.SessionID]framework.DependencyState)
	for _, d := range edges {
		e := rowErr{table: "sessions", id: d.DependsOn}
		st := e.sessionStatus("status", d.Status)
		oc, err := domain.ParseOutcome(d.Outcome)
		e.fail("outcome", err)
		if e.err != nil {
			return nil, e.err
		}
		target := domain.SessionID(d.DependsOn)
		states[target] = framework.DependencyState{Status: st, Outcome: oc}
		if i, ok := index[domain.SessionID(d.Session)]; ok {
			sessions[i].Session.DependsOn = append(sessions[i].Session.DependsOn, target)
		}
	}
	return states, nil
}

// GroupKernels attaches kernels (ordered by session, then cluster index) to
// their sessions.
func GroupKernels(sessions []framework.PendingSession, kernels []domain.Kernel) {
	index := make(map[domain.SessionID]int, len(sessions))
	for i, s := range sessions {
		index[s.Session.ID] = i
	}
	for _, k := range kernels {
		if i, ok := index[k.SessionID]; ok {
			sessions[i].Kernels = append(sessions[i].Kernels, k)
		}
	}
}
