package coordinator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// gangMetrics are the series seed 004 (KubeNexus) names, in our
// namespace: scheduling attempts by result, scheduling duration, gang
// size, sessions waiting at Permit and reservations held.
type gangMetrics struct {
	attempts     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	size         prometheus.Histogram
	waiting      prometheus.Gauge
	reservations prometheus.Gauge
}

// Results of sokovan_scheduling_attempts_total: one per PENDING session a
// round considered, or one "error" for a round that failed outright.
const (
	attemptScheduled     = "scheduled"
	attemptUnschedulable = "unschedulable"
	attemptError         = "error"
)

func newGangMetrics(reg prometheus.Registerer) *gangMetrics {
	g := &gangMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_scheduling_attempts_total",
			Help: "Scheduling attempts per PENDING session by resource group and result (scheduled, unschedulable: " +
				"waiting, cancelled or refused by the plan applier; error: a round that failed)."}, []string{"resource_group", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sokovan_scheduling_duration_seconds",
			Help:    "Time of one scheduling round of a resource group: snapshot, decision and plan application.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"resource_group"}),
		size: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sokovan_job_gang_size",
			Help:    "Members of a job placed together when its gang formed (seed 004's pod group size).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sokovan_permit_waiting_sessions",
			Help: "Job members placed but held SCHEDULED at Permit because their gang is short of min_available."}),
		reservations: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sokovan_job_reservations",
			Help: "Job members holding a reservation (SCHEDULED) that has not started yet."}),
	}
	register(reg, g.attempts, g.duration, g.size, g.waiting, g.reservations)
	return g
}

func (g *gangMetrics) round(group string, start time.Time, scheduled, unschedulable int, err error) {
	g.duration.WithLabelValues(group).Observe(time.Since(start).Seconds())
	if err != nil {
		g.attempts.WithLabelValues(group, attemptError).Inc()
		return
	}
	g.attempts.WithLabelValues(group, attemptScheduled).Add(float64(scheduled))
	g.attempts.WithLabelValues(group, attemptUnschedulable).Add(float64(unschedulable))
}

// gangs observes the size of every job gang the round formed: the members
// of a job short of min-available that were placed together.
func (g *gangMetrics) gangs(snap *framework.Snapshot, applied []domain.SessionID) {
	if len(snap.Jobs) == 0 || len(applied) == 0 {
		return
	}
	job := make(map[domain.SessionID]domain.JobID, len(snap.Pending))
	for _, p := range snap.Pending {
		job[p.Session.ID] = p.Session.Job
	}
	formed := map[domain.JobID]int{}
	for _, id := range applied {
		if j := job[id]; j != "" {
			if info, ok := snap.Jobs[j]; ok && info.Placed < info.MinAvailable {
				formed[j]++
			}
		}
	}
	for _, n := range formed {
		g.size.Observe(float64(n))
	}
}

func (g *gangMetrics) permit(waiting, reservations int) {
	g.waiting.Set(float64(waiting))
	g.reservations.Set(float64(reservations))
}
