package api

import (
	"crypto/subtle"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// privateLabels are the labels that say who uses the cluster and for
// what: a series carrying one is left out of an anonymous scrape. /metrics
// needs no token, so load balancers and Prometheus can reach it, and what
// every user holds or which deployments exist is not for anyone who can
// reach the port.
var privateLabels = []string{"user", "deployment"}

// mayScrapeAll reports whether the request may see the private series:
// it carries the metrics token, or an admin's token.
func (s *Server) mayScrapeAll(r *http.Request) bool {
	token, ok := bearer(r)
	if !ok {
		return false
	}
	if s.cfg.MetricsToken != "" &&
		subtle.ConstantTimeCompare(HashToken(token), HashToken(s.cfg.MetricsToken)) == 1 {
		return true
	}
	u, err := s.store.UserByTokenHash(r.Context(), HashToken(token))
	return err == nil && isAdmin(u) && s.tokenExpired(u) == nil
}

// withoutPrivate gathers everything but the families whose series carry
// a private label.
type withoutPrivate struct{ g prometheus.Gatherer }

func (w withoutPrivate) Gather() ([]*dto.MetricFamily, error) {
	fams, err := w.g.Gather()
	return slices.DeleteFunc(fams, func(f *dto.MetricFamily) bool {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if slices.Contains(privateLabels, l.GetName()) {
					return true
				}
			}
		}
		return false
	}), err
}
