// Package apitest runs a whole manager in a test: a real store (SQLite or
// PostgreSQL), a real coordinator driven in the background, agents that
// answer at once, and the API on an httptest server. The API's own tests
// and the CLI's tests drive it over HTTP.
//
// It is imported only by tests. It may import everything a manager is
// built from: internal/api and its wire types (internal/api/v1),
// internal/coordinator, internal/agentgw, the store engines and
// store/pgtest, internal/scheduler, internal/domain.
//
// Imports: internal/clock, internal/api, internal/api/v1, internal/admit, internal/agentgw,
// internal/coordinator, internal/deploy, internal/domain, internal/pki,
// internal/scheduler, internal/simulate, internal/store/...,
// github.com/prometheus/client_golang/prometheus.
package apitest
