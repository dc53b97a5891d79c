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
		held: perGroupGauge("sokovan_reservations",
			"Waiting sessions holding reservations per resource group at the last scheduling round."),
		backfilled: perGroupCounter("sokovan_backfilled_placements_total",
			"Sessions placed past a reservation, checked not to delay it, and applied, per resource group."),
	}
	register(reg, m.held, m.backfilled)
	return m
}

// perGroupCounter and perGroupGauge make a series labelled by resource
// group, the label most of the coordinator's series carry.
func perGroupCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"resource_group"})
}

func perGroupGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"resource_group"})
}

// register registers cs on reg; a nil reg (tests, the simulator) keeps
// them unregistered.
func register(reg prometheus.Registerer, cs ...prometheus.Collector) {
	if reg != nil {
		reg.MustRegister(cs...)
	}
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
