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

func newReserveMetrics(reg prometheus.Registerer) *reserveMetrics {
	m := &reserveMetrics{
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sokovan_reservations",
			Help: "Waiting sessions holding reservations per resource group at the last scheduling round."},
			[]string{"resource_group"}),
		backfilled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_backfilled_placements_total",
			Help: "Sessions placed past a reservation, checked not to delay it, and applied, per resource group."},
			[]string{"resource_group"}),
	}
	if reg != nil {
		reg.MustRegister(m.held, m.backfilled)
	}
	return m
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
