package api

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, v1.Status{Status: "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.ready != nil {
		if err := s.ready(r.Context()); err != nil {
			s.log.WarnContext(r.Context(), "not ready", "err", err)
			return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable, Message: "not ready: " + err.Error()}
		}
	}
	writeJSON(w, http.StatusOK, v1.Status{Status: "ready"})
	return nil
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.gatherer == nil {
		return &apiError{Status: http.StatusNotImplemented, Code: codeNotImplemented, Message: "no metrics registry"}
	}
	var g prometheus.Gatherer = s.gatherer
	if !s.mayScrapeAll(r) {
		g = withoutPrivate{s.gatherer}
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}}).ServeHTTP(w, r)
	return nil
}

func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.openapi)
	return nil
}

func (s *Server) agentRPCRoute(w http.ResponseWriter, r *http.Request) error {
	if s.agentRPC == nil {
		return &apiError{Status: http.StatusNotImplemented, Code: codeNotImplemented, Message: "no agent RPC on this manager"}
	}
	s.agentRPC.ServeHTTP(w, r)
	return nil
}

// slogPrinter hands promhttp's gathering errors to the server's log.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Warn("metrics", "err", fmt.Sprint(v...)) }
