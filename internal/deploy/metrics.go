package deploy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// metrics are the controller's series; nil records nothing.
type metrics struct {
	routesByStatus *prometheus.GaugeVec
	checks         *prometheus.CounterVec
	checkLatency   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		routesByStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sokovan_deployment_routes",
			Help: "Routes of each live deployment by status, as of the controller's latest pass."}, []string{"deployment", "status"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_route_health_checks_total",
			Help: "Route health checks by result (success or failure)."}, []string{"result"}),
		checkLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sokovan_route_health_check_duration_seconds",
			Help: "Route health check duration.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8)}),
	}
	reg.MustRegister(m.routesByStatus, m.checks, m.checkLatency)
	return m
}

func (m *metrics) routes(deps []domain.Deployment, byDep map[domain.DeploymentID][]*domain.Route) {
	if m == nil {
		return
	}
	// Reset, so a destroyed deployment's series go away.
	m.routesByStatus.Reset()
	for _, d := range deps {
		counts := map[domain.RouteStatus]int{}
		for _, r := range byDep[d.ID] {
			counts[r.Status]++
		}
		for _, s := range domain.RouteStatuses() {
			if s.Terminal() {
				continue
			}
			m.routesByStatus.WithLabelValues(string(d.ID), s.String()).Set(float64(counts[s]))
		}
	}
}

func (m *metrics) check(p probe) {
	if m == nil {
		return
	}
	result := "failure"
	if p.ok {
		result = "success"
	}
	m.checks.WithLabelValues(result).Inc()
	m.checkLatency.Observe(p.took.Seconds())
}
