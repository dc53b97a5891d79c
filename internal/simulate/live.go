package simulate

import (
	"context"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TypicalRun is what an estimate assumes a session runs for when nothing
// better is known: sessions carry no expected duration, and the store
// keeps no time limit, so it goes by type. Interactive sessions match the
// generator's default time limit (8 h); the others are round guesses, and
// an estimate is only as good as they are.
var TypicalRun = map[domain.SessionType]time.Duration{
	domain.TypeBatch:       time.Hour,
	domain.TypeInteractive: 8 * time.Hour,
	domain.TypeInference:   24 * time.Hour,
}

func typicalRun(t domain.SessionType) time.Duration {
	if d, ok := TypicalRun[t]; ok {
		return d
	}
	return time.Hour
}

// LiveStore is what LoadLive reads.
type LiveStore interface {
	LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error)
	ListSessions(ctx context.Context, f store.SessionFilter) ([]domain.Session, error)
	ListKernels(ctx context.Context, f store.KernelFilter) ([]domain.Kernel, error)
}

// LoadLive reads a group as Estimate wants it: the scheduler's snapshot
// for agents, queue and policies, and the sessions holding resources with
// their kernels. Expected ends and run times are TypicalRun's: a RUNNING
// session ends that long after it started running, one not yet running
// that long from now.
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
		live.Pending = append(live.Pending, LiveSession{Session: p.Session, Kernels: p.Kernels, Run: typicalRun(p.Session.Type)})
	}
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
		end := now.Add(typicalRun(r.Type))
		if r.Status == domain.SessionRunning {
			end = r.StatusChangedAt.Add(typicalRun(r.Type))
		}
		live.Running = append(live.Running, LiveSession{Session: r, Kernels: byS[r.ID], End: end})
	}
	return live, nil
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
