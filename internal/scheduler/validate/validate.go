package validate

import (
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// GroupState holds every session while its resource group is STOPPED.
// A DRAINING group refuses new sessions at submit but keeps scheduling the
// ones it holds, so they can finish and the group can be removed (seed 003).
type GroupState struct{}

func (GroupState) Name() string { return "group_state" }

func (GroupState) Validate(st *framework.State, _ *framework.Session, out []framework.Blocker) []framework.Blocker {
	g := st.Snap.Group
	if g.State.Schedules() {
		return out
	}
	return append(out, framework.Blocker{
		Kind: framework.BlockResourceGroupState, Scope: "group:" + g.Name, Detail: g.State.String(),
	})
}

// SessionType refuses sessions of a type the group does not run. The API
// refuses them at submit; this catches a group reconfigured since, and
// cancels rather than letting the session wait for a change nobody plans.
type SessionType struct{}

func (SessionType) Name() string { return "session_type" }

func (SessionType) Validate(st *framework.State, s *framework.Session, out []framework.Blocker) []framework.Blocker {
	t := s.Pending.Session.Type
	if st.Snap.Group.Allows(t) {
		return out
	}
	return append(out, framework.Blocker{
		Kind: framework.BlockSessionType, Scope: "group:" + st.Snap.Group.Name, Detail: string(t), Impossible: true,
	})
}

// StartTime holds a batch session until its starts_at.
type StartTime struct{}

func (StartTime) Name() string { return "start_time" }

func (StartTime) Validate(st *framework.State, s *framework.Session, out []framework.Blocker) []framework.Blocker {
	at := s.Pending.Session.StartsAt
	if at.IsZero() || !at.After(st.Snap.Now) {
		return out
	}
	return append(out, framework.Blocker{
		Kind: framework.BlockStartTime, Scope: "session:" + string(s.Pending.Session.ID),
		Detail: at.UTC().Format(time.RFC3339),
	})
}

// Dependencies holds a session until every session it depends on has
// TERMINATED with success. A dependency that ended any other way, or that no
// longer exists, can never succeed, so the session is impossible rather than
// left waiting forever.
type Dependencies struct{}

func (Dependencies) Name() string { return "dependencies" }

func (Dependencies) Validate(st *framework.State, s *framework.Session, out []framework.Blocker) []framework.Blocker {
	for _, dep := range s.Pending.Session.DependsOn {
		d, ok := st.Snap.Dependencies[dep]
		switch {
		case !ok:
			out = append(out, framework.Blocker{Kind: framework.BlockDependency, Scope: "session:" + string(dep),
				Detail: "missing", Impossible: true})
		case d.Status == domain.SessionTerminated && d.Outcome == domain.OutcomeSuccess:
		case d.Status.Terminal():
			detail := d.Status.String()
			if d.Outcome != domain.OutcomeNone {
				detail += " (" + d.Outcome.String() + ")"
			}
			out = append(out, framework.Blocker{Kind: framework.BlockDependency, Scope: "session:" + string(dep),
				Detail: detail, Impossible: true})
		default:
			out = append(out, framework.Blocker{Kind: framework.BlockDependency, Scope: "session:" + string(dep),
				Detail: d.Status.String()})
		}
	}
	return out
}

// Quota holds a session whose slots would take its user (keypair), project
// or domain past a policy limit, counting what this round already placed.
type Quota struct{}

func (Quota) Name() string { return "quota" }

func (Quota) Validate(st *framework.State, s *framework.Session, out []framework.Blocker) []framework.Blocker {
	for _, o := range s.Owners() {
		limits := o.Limits()
		if limits == nil {
			continue
		}
		used := o.Occupied()
		for _, am := range s.Total.Amounts {
			limit := limits.At(am.Slot)
			if limit == domain.MaxQuantity {
				continue
			}
			if domain.AddSat(used.At(am.Slot), am.Q) > limit {
				out = append(out, framework.Blocker{
					Kind: framework.BlockQuota, Scope: o.Scope, Slot: st.Snap.Slots.Type(am.Slot).Name,
					Requested: am.Q, Available: max(domain.SubSat(limit, used.At(am.Slot)), 0), Capacity: limit,
				})
			}
		}
	}
	return out
}

// Concurrency holds a session while its user, project or domain already
// holds its maximum number of concurrent sessions.
type Concurrency struct{}

func (Concurrency) Name() string { return "concurrency" }

func (Concurrency) Validate(_ *framework.State, s *framework.Session, out []framework.Blocker) []framework.Blocker {
	for _, o := range s.Owners() {
		maxc := o.MaxConcurrent()
		if maxc <= 0 || o.Active() < maxc {
			continue
		}
		out = append(out, framework.Blocker{
			Kind: framework.BlockConcurrency, Scope: o.Scope, Requested: 1,
			Available: domain.Quantity(max(maxc-o.Active(), 0)), Capacity: domain.Quantity(maxc),
		})
	}
	return out
}

// ArrayCap holds an element of an array while as many of the array's
// elements hold resources as its cap (SLURM's %N) allows, counting this
// round's placements, so a round never starts more than the cap.
type ArrayCap struct{}

func (ArrayCap) Name() string { return "array_cap" }

func (ArrayCap) Validate(st *framework.State, s *framework.Session, out []framework.Blocker) []framework.Blocker {
	info, running, capped := st.ArrayRunning(s.Pending.Session.Array)
	if !capped || running < info.MaxRunning {
		return out
	}
	return append(out, framework.Blocker{
		Kind: framework.BlockArray, Scope: "array:" + info.Name, Requested: 1,
		Available: domain.Quantity(max(info.MaxRunning-running, 0)), Capacity: domain.Quantity(info.MaxRunning),
	})
}

// Defaults returns the validators every group runs, cheapest and most
// decisive first.
func Defaults() []framework.Validator {
	return []framework.Validator{GroupState{}, SessionType{}, Dependencies{}, StartTime{}, Quota{}, Concurrency{}, ArrayCap{}}
}
