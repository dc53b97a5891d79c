// Package api is the manager's HTTP API (API.md's REST API v1): routing,
// authentication and authorisation, request validation, the conversion of
// records into the JSON shapes users and tools depend on, the OpenAPI
// document describing them, and the server-sent event stream of session
// and kernel status changes. It also proxies the ports sessions' kernels
// serve (proxy.go) to their owners, with httputil.ReverseProxy, so users
// reach what they run through the one authenticated address. The shapes
// themselves are package v1's
// (internal/api/v1), shared with the CLI; the document is reflected from
// them, and a test holds every schema in it to that package.
//
// Sessions are named in every route by id, unique id prefix or name
// (resolve.go), so the API and the CLI read a reference alike; the queue
// view and why share one dry run of the scheduler (queue.go). Apply
// (apply.go) creates, keeps or updates sessions, jobs and deployments by
// name from objects whose spec is the create routes' own request types,
// through the create and update routes' own checks and writes.
//
// Handlers validate, call, and convert errors at the boundary only: a
// request that fails validation writes nothing. Everything the API needs
// is passed in through Deps as small interfaces it owns (the store methods
// it uses, the coordinator's Terminate and Mark), so it imports neither the
// coordinator nor a storage engine. The start estimate of why comes the
// same way, as a function (Deps.Estimate), because it replays the group
// through both.
//
// A session request is admitted by internal/admit (defaults, checks,
// hooks, policy limits, kernels), which deployments' routes go through
// too; the API converts the wire request into admit's, resolves
// dependencies as the caller may see them, and maps admission's refusal
// classes to its status codes. Proxied traffic and logs record the session's activity
// for the idle timeout, at most once per 30 s per session (activity.go).
//
// It may import internal/api/v1, internal/admit, internal/domain, internal/hook,
// internal/store (types and error classes), internal/scheduler and its framework (for the "why"
// and queue dry runs), internal/clock, the Prometheus client (its HTTP
// handler, and its data model to leave private series out of an anonymous
// scrape), and the standard library.
//
// Imports: internal/clock, internal/api/v1, internal/admit, internal/domain, internal/hook, internal/pki,
// internal/store, internal/scheduler, internal/scheduler/framework, internal/scheduler/sequence,
// github.com/prometheus/client_golang/prometheus,
// github.com/prometheus/client_golang/prometheus/promhttp,
// github.com/prometheus/client_model/go.
package api
