package simulate

import (
	"context"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TypicalRun is what an estimate assumes a session without a time limit
// runs for: sessions carry no expected duration, so it goes by type.
// Interactive sessions match the generator's default time limit (8 h); the
// others are round guesses, and such an estimate is only as good as they
// are.
var TypicalRun = map[domain.SessionType]time.Duration{
	domain.TypeBatch:       time.Hour,
	domain.TypeInteractive: 8 * time.Hour,
	domain.TypeInference:   24 * time.Hour,
}

// ExpectedRun is how long an estimate assumes s runs once started: its
// time limit where it has one, as the reservations plan with (the sweep
// ends it there at the latest, so the estimate errs late, never early,
// for the sessions it waits on), else TypicalRun's guess for its type.
func ExpectedRun(s domain.Session) time.Duration {
	if s.TimeLimit > 0 {
		return s.TimeLimit
	}
	if d, ok := TypicalRun[s.Type]; ok {
		return d
	}
	return time.Hour
}

// ExpectedEnd is when a session holding resources is expected to end: a
// RUNNING one ExpectedRun after it started running (time limits count from
// there), one not yet running ExpectedRun from now.
func ExpectedEnd(s domain.Session, now time.Time) time.Time {
	if s.Status == domain.SessionRunning {
		return s.StatusChangedAt.Add(ExpectedRun(s))
	}
	return now.Add(ExpectedRun(s))
}

// LiveStore is what LoadLive reads.
type LiveStore interface {
	LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error)
	ListSessions(ctx context.Context, f store.SessionFilter) ([]domain.Session, error)
	ListKernels(ctx context.Context, f store.KernelFilter) ([]domain.Kernel, error)
	ListJobs(ctx context.Context, f store.JobFilter) ([]domain.Job, error)
}

// LoadLive reads a group as Estimate wants it: the scheduler's snapshot
// for agents, queue and policies, and the sessions holding resources with
// their kernels, with ExpectedEnd and ExpectedRun.
func LoadLive(ctx context.Context, st LiveStore, reg *domain.Registry, group string, now time.Time) (Live, error) {
	snap, err := st.LoadSnapshot(ctx, group, now)
	if err != nil {
		return Live{}, err
	}
	live := Live{Now: now, Slots: reg, Group: snap.Group, Agents: snap.Agents}
	for _, m := range []map[string]domain.Policy{snap.Policies.Users, snap.Policies.Projects, snap.Policies.Domains} {
		for _, p := range m {
			live.Policies = append(live.Policies, p)
		}
	}
	for _, p := range snap.Pending {
		live.Pending = append(live.Pending, LiveSession{Session: p.Session, Kernels: p.Kernels, Run: ExpectedRun(p.Session)})
	}
	live.Arrays = cappedArrays(snap)
	var holding []domain.SessionStatus
	for _, st := range domain.SessionStatuses() {
		if st.HoldsResources() {
			holding = append(holding, st)
		}
	}
	running, err := st.ListSessions(ctx, store.SessionFilter{Statuses: holding, Group: group})
	if err != nil {
		return Live{}, err
	}
	ids := make([]domain.SessionID, len(running))
	for i, r := range running {
		ids[i] = r.ID
	}
	var kernels []domain.Kernel
	if len(ids) > 0 {
		if kernels, err = st.ListKernels(ctx, store.KernelFilter{Sessions: ids}); err != nil {
			return Live{}, err
		}
	}
	byS := map[domain.SessionID][]domain.Kernel{}
	for _, k := range kernels {
		if k.Status.HoldsResources() {
			byS[k.SessionID] = append(byS[k.SessionID], k)
		}
	}
	for _, r := range running {
		live.Running = append(live.Running, LiveSession{Session: r, Kernels: byS[r.ID], End: ExpectedEnd(r, now)})
	}
	// The jobs of those sessions, so that the replay's members join them
	// (and wait for their gangs) as the real ones do: the live jobs in one
	// read, kept where a session of the group belongs to one.
	want := map[domain.JobID]bool{}
	for _, ls := range slices.Concat(live.Running, live.Pending) {
		if ls.Session.Job != "" {
			want[ls.Session.Job] = true
		}
	}
	if len(want) > 0 {
		jobs, err := st.ListJobs(ctx, store.JobFilter{Live: true})
		if err != nil {
			return Live{}, err
		}
		for _, j := range jobs {
			if want[j.ID] {
				live.Jobs = append(live.Jobs, j)
			}
		}
	}
	return live, nil
}

// cappedArrays are the arrays the snapshot caps, as Live wants them: the
// snapshot has each capped array with a pending element in the group,
// which is every array whose cap can hold anything back; its owner is
// its elements'. The replay counts the elements that hold resources
// itself.
func cappedArrays(snap framework.Snapshot) []domain.Array {
	var out []domain.Array
	seen := map[domain.ArrayID]bool{}
	for _, p := range snap.Pending {
		id := p.Session.Array
		info, capped := snap.Arrays[id]
		if !capped || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, domain.Array{ID: id, Name: info.Name, Owner: p.Session.Owner, MaxRunning: info.MaxRunning})
	}
	return out
}

// Estimator returns Estimate over LoadLive, for a manager to hand its API.
func Estimator(st LiveStore, reg *domain.Registry, clock interface{ Now() time.Time }) func(ctx context.Context, group string) (map[domain.SessionID]time.Time, error) {
	return func(ctx context.Context, group string) (map[domain.SessionID]time.Time, error) {
		live, err := LoadLive(ctx, st, reg, group, clock.Now())
		if err != nil {
			return nil, err
		}
		return Estimate(ctx, live, 0)
	}
}

// EstimatorWith is Estimator with sessions not yet stored queued after
// the group's pending ones, and the jobs and arrays they belong to, for a
// dry run of apply: when would these start, were they submitted now.
func EstimatorWith(st LiveStore, reg *domain.Registry, clock interface{ Now() time.Time }) func(ctx context.Context, group string, extra []framework.PendingSession, jobs []domain.Job, arrays []domain.Array) (map[domain.SessionID]time.Time, error) {
	return func(ctx context.Context, group string, extra []framework.PendingSession, jobs []domain.Job, arrays []domain.Array) (map[domain.SessionID]time.Time, error) {
		live, err := LoadLive(ctx, st, reg, group, clock.Now())
		if err != nil {
			return nil, err
		}
		for _, p := range extra {
			live.Pending = append(live.Pending, LiveSession{Session: p.Session, Kernels: p.Kernels, Run: ExpectedRun(p.Session)})
		}
		have := map[domain.JobID]bool{}
		for _, j := range live.Jobs {
			have[j.ID] = true
		}
		for _, j := range jobs {
			if !have[j.ID] {
				live.Jobs = append(live.Jobs, j)
				have[j.ID] = true
			}
		}
		// The live arrays are the ones LoadLive found; a new array's
		// elements are all among extra.
		live.Arrays = append(live.Arrays, arrays...)
		return Estimate(ctx, live, 0)
	}
}
