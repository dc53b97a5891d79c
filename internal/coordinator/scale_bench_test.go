package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/pgtest"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// BenchmarkScheduleNewSessionsScale runs the real ScheduleNewSessions
// once per iteration over issue 18's group on PostgreSQL: 10k agents and
// 100k pending sessions (storetest.BenchScaleStore), in two shapes: a busy
// group whose agents have room for 40k of them (placed=40k, the size the
// issue's target assumes), and an idle one where all 100k fit
// (placed=100k). Between iterations,
// with the timer stopped, placed sessions go back to PENDING and a new
// coordinator is made, so no round is skipped as idle. Besides ns/op it
// reports the store calls that make up a cycle, in seconds per cycle.
//
//	go test -run '^$' -bench ScheduleNewSessionsScale -benchtime 3x -timeout 30m ./internal/coordinator/
func BenchmarkScheduleNewSessionsScale(b *testing.B) {
	for _, shape := range []struct {
		name string
		cpu  int
	}{
		{"placed=40k", storetest.BenchScalePlaced / storetest.BenchScaleAgents},
		{"placed=100k", storetest.BenchAgentCPU},
	} {
		b.Run(shape.name, func(b *testing.B) { benchScheduleScale(b, shape.cpu) })
	}
}

func benchScheduleScale(b *testing.B, cpu int) {
	st, _ := storetest.BenchScaleStore(b, pgtest.Engine(), pgtest.BenchSeed, cpu)
	ts := &timedStore{Store: st}
	ids := make([]domain.SessionID, storetest.BenchScaleSessions)
	for i := range ids {
		ids[i] = domain.SessionID(storetest.BenchSessionID(i))
	}
	back := domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}
	ctx := b.Context()
	placed := 0
	for b.Loop() {
		b.StopTimer()
		if _, err := st.TransitionSessions(ctx, ids, []domain.SessionStatus{domain.SessionScheduled}, back, "",
			time.Now()); err != nil {
			b.Fatal(err)
		}
		c := coordinator.New(coordinator.Deps{Store: ts, Scheduler: scheduler.New(scheduler.NewRegistry())},
			coordinator.Config{})
		before := ts.placed
		b.StartTimer()
		if err := c.ScheduleNewSessions(ctx); err != nil {
			b.Fatal(err)
		}
		placed = ts.placed - before
	}
	b.StopTimer()
	if placed == 0 {
		b.Fatal("the round placed nothing")
	}
	n := float64(b.N)
	b.ReportMetric(float64(placed), "placed")
	b.ReportMetric(ts.load.Seconds()/n, "load-s")
	b.ReportMetric(ts.apply.Seconds()/n, "apply-s")
	b.ReportMetric(ts.history.Seconds()/n, "history-s")
}

// timedStore adds up the time of the store calls a scheduling cycle
// spends most in, to say where a cycle's time goes.
type timedStore struct {
	store.Store
	load, apply, history time.Duration
	placed               int
}

func (s *timedStore) LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error) {
	defer s.since(&s.load, time.Now())
	return s.Store.LoadSnapshot(ctx, group, now)
}

func (s *timedStore) ApplyPlan(ctx context.Context, plan framework.Plan, now time.Time) (store.ApplyResult, error) {
	defer s.since(&s.apply, time.Now())
	res, err := s.Store.ApplyPlan(ctx, plan, now)
	s.placed += len(res.Applied)
	return res, err
}

func (s *timedStore) AppendHistory(ctx context.Context, entries []domain.HistoryEntry) error {
	defer s.since(&s.history, time.Now())
	return s.Store.AppendHistory(ctx, entries)
}

func (s *timedStore) since(d *time.Duration, start time.Time) { *d += time.Since(start) }
