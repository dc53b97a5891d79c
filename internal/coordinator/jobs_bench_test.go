package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
)

// BenchmarkReconcileJobs runs one job-reconciler pass over a job of 1,200
// members (all PENDING, the job ACCEPTED: a pass that moves nothing, the
// common case) and reports the member rows it read from the store.
//
//	go test -run '^$' -bench ReconcileJobs -benchtime 20x ./internal/coordinator/
func BenchmarkReconcileJobs(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			h := newHarness(b, engine, 0, nil)
			j := h.newJob("big", 1200, time.Hour, domain.FailureWait)
			for range 1200 {
				h.member(j, "sleep")
			}
			rows := &memberRows{Store: h.st}
			c := coordinator.New(coordinator.Deps{Store: rows, Agents: h.agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
				Clock: h.clock}, coordinator.Config{})
			ctx := context.Background()
			if err := c.ReconcileJobs(ctx); err != nil { // NEW → ACCEPTED
				b.Fatal(err)
			}
			h.wantJob(j, domain.JobAccepted)
			rows.n = 0
			for b.Loop() {
				if err := c.ReconcileJobs(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows.n)/float64(b.N), "member-rows/op")
		})
	}
}

// memberRows counts the job member rows the coordinator reads.
type memberRows struct {
	store.Store
	n int
}

func (m *memberRows) JobMembers(ctx context.Context, id domain.JobID) ([]domain.Session, error) {
	s, err := m.Store.JobMembers(ctx, id)
	m.n += len(s)
	return s, err
}

func (m *memberRows) LiveJobs(ctx context.Context) ([]store.JobWithMembers, error) {
	l, err := m.Store.LiveJobs(ctx)
	for _, j := range l {
		m.n += len(j.Members)
	}
	return l, err
}
