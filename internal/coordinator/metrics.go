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
}

// NewMetrics builds the series and registers them on reg when not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_handler_runs_total",
			Help: "Handler runs."}, []string{"handler"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_handler_outcomes_total",
			Help: "Session outcomes by handler and result."}, []string{"handler", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sokovan_handler_duration_seconds",
			Help: "Handler run time.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"handler"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sokovan_pending_sessions",
			Help: "PENDING sessions per resource group at the last scheduling round."}, []string{"resource_group"}),
		startLat: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sokovan_session_start_seconds",
			Help: "Time from submit to RUNNING.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}),
		byStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sokovan_sessions",
			Help: "Live (not ended) sessions by status, at the last sweep."}, []string{"status"}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.outcomes, m.duration, m.pending, m.startLat, m.byStatus)
	}
	return m
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
