package coordinator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Metrics are the coordinator's Prometheus series. They are registered on
// the registerer given, never on a global one.
type Metrics struct {
	runs     *prometheus.CounterVec
	outcomes *prometheus.CounterVec
	duration *prometheus.HistogramVec
	pending  *prometheus.GaugeVec
	startLat prometheus.Histogram
	byStatus *prometheus.GaugeVec
	rounds   *prometheus.CounterVec
	decided  *prometheus.CounterVec
	wait     *prometheus.HistogramVec
	gang     *gangMetrics // seed 004's names (metrics_gang.go)
	reserve  *reserveMetrics
	preempt  *preemptMetrics
}

// Scheduling decisions, the result label of
// sokovan_scheduling_decisions_total: what one round did with each
// PENDING session it considered.
const (
	decisionScheduled  = "scheduled"  // placed and committed
	decisionRejected   = "rejected"   // placed, but the plan applier's re-check refused it
	decisionWaiting    = "waiting"    // left PENDING: capacity, quota, dependency, …
	decisionImpossible = "impossible" // cancelled: no wait can help
)

// NewMetrics builds the series and registers them on reg when not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_handler_runs_total",
			Help: "Handler runs."}, []string{"handler"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_handler_outcomes_total",
			Help: "Session outcomes by handler and result."}, []string{"handler", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sokovan_handler_duration_seconds",
			Help: "Handler run time.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"handler"}),
		pending: perGroupGauge("sokovan_pending_sessions",
			"PENDING sessions per resource group at the last scheduling round."),
		startLat: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sokovan_session_start_seconds",
			Help: "Time from submit to RUNNING.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}),
		byStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sokovan_sessions",
			Help: "Live (not ended) sessions by status, at the last sweep."}, []string{"status"}),
		rounds: perGroupCounter("sokovan_scheduling_rounds_total",
			"Scheduling rounds run per resource group with sessions PENDING."),
		decided: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_scheduling_decisions_total",
			Help: "What scheduling rounds decided per PENDING session, by resource group and result " +
				"(scheduled, rejected by the plan applier, waiting, impossible)."}, []string{"resource_group", "result"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sokovan_queue_wait_seconds",
			Help:    "Time from submit to placement (PENDING to SCHEDULED) per resource group.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 18)}, []string{"resource_group"}),
		reserve: &reserveMetrics{
			held: perGroupGauge("sokovan_reservations",
				"Waiting sessions holding reservations per resource group at the last scheduling round."),
			backfilled: perGroupCounter("sokovan_backfilled_placements_total",
				"Sessions placed past a reservation, checked not to delay it, and applied, per resource group."),
		},
		preempt: &preemptMetrics{
			count: perGroupCounter("sokovan_preemptions_total",
				"Sessions preempted by higher priority sessions, per resource group."),
			workLost: perGroupCounter("sokovan_preemption_work_lost_seconds_total",
				"Run time of preempted sessions thrown away, per resource group."),
		},
	}
	// Every live status is exported from the start, at 0 until the first
	// sweep counts it, so a dashboard never finds the series absent.
	for _, s := range domain.SessionStatuses() {
		if !s.Terminal() {
			m.byStatus.WithLabelValues(s.String())
		}
	}
	register(reg, m.runs, m.outcomes, m.duration, m.pending, m.startLat, m.byStatus, m.rounds, m.decided, m.wait,
		m.reserve.held, m.reserve.backfilled, m.preempt.count, m.preempt.workLost)
	m.gang = newGangMetrics(reg)
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

// round counts one scheduling round of group and what it decided. Every
// result is added, zero too, so each group's series exist from its first
// round and a rate over them is never absent.
func (m *Metrics) round(group string, scheduled, rejected, waiting, impossible int) {
	m.rounds.WithLabelValues(group).Inc()
	m.decided.WithLabelValues(group, decisionScheduled).Add(float64(scheduled))
	m.decided.WithLabelValues(group, decisionRejected).Add(float64(rejected))
	m.decided.WithLabelValues(group, decisionWaiting).Add(float64(waiting))
	m.decided.WithLabelValues(group, decisionImpossible).Add(float64(impossible))
}

func (m *Metrics) placed(group string, d time.Duration) {
	m.wait.WithLabelValues(group).Observe(d.Seconds())
}

func (m *Metrics) run(h domain.HandlerName, start time.Time) {
	m.runs.WithLabelValues(string(h)).Inc()
	m.duration.WithLabelValues(string(h)).Observe(time.Since(start).Seconds())
}

func (m *Metrics) outcome(h domain.HandlerName, r domain.Result) {
	m.outcomes.WithLabelValues(string(h), string(r)).Inc()
}

func (m *Metrics) queue(group string, n int) { m.pending.WithLabelValues(group).Set(float64(n)) }

func (m *Metrics) started(d time.Duration) { m.startLat.Observe(d.Seconds()) }

func (m *Metrics) sessions(s domain.SessionStatus, n int) {
	m.byStatus.WithLabelValues(s.String()).Set(float64(n))
}
