// Package deploy owns model-serving deployments and their routes (seed
// 001): the controller that keeps each deployment's replicas, one
// inference session per route, moving deployments and routes through the
// tables in internal/domain; the HTTP health checks of the routes; eviction
// and replacement of unhealthy ones; the backoff of routes that fail to
// start; and destroy. It also resolves where a route serves, for the
// health checks and the API's traffic proxy.
//
// Routes' sessions are admitted through the Admitter port
// (internal/admit, with the deployment's spec: the same validation,
// quotas and scheduler as a user's submit, so `why` explains a replica
// that does not start) and ended through the Sessions port (the
// coordinator's Terminate). The controller acts only while its manager
// holds the coordinator's lease, so several managers never drive one
// deployment.
//
// It may import internal/admit, internal/domain, internal/store (for its
// filters and errors), the Prometheus client and the standard library;
// never the API, the coordinator's internals or an engine.
//
// Imports: internal/clock, internal/admit, internal/domain, internal/store,
// github.com/prometheus/client_golang/....
// Never links: internal/api/..., internal/store/sqlstore/...,
// internal/store/sqlite/..., internal/store/postgres/....
package deploy
