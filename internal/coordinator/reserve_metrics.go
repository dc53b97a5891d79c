package coordinator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// reserveMetrics are the series of head-of-line reserve: how many
// reservations the last round held, and how many placements the rounds
// made past a reservation (backfills) that the store applied.
type reserveMetrics struct {
	held       *prometheus.GaugeVec
	backfilled *prometheus.CounterVec
}

// reservations records one round's reservations and the backfills among
// the placements the store applied.
func (m *reserveMetrics) reservations(group string, plan framework.Plan, applied []domain.SessionID) {
	m.held.WithLabelValues(group).Set(float64(len(plan.Reservations)))
	if len(plan.Backfilled) == 0 {
		m.backfilled.WithLabelValues(group).Add(0)
		return
	}
	backfilled := make(map[domain.SessionID]bool, len(plan.Backfilled))
	for _, id := range plan.Backfilled {
		backfilled[id] = true
	}
	n := 0
	for _, id := range applied {
		if backfilled[id] {
			n++
		}
	}
	m.backfilled.WithLabelValues(group).Add(float64(n))
}
