// Package api is the manager's HTTP API (API.md's REST API v1): routing,
// authentication and authorisation, request validation, the conversion of
// records into the JSON shapes users and tools depend on, the OpenAPI
// document describing them, and the server-sent event stream of session
// and kernel status changes. The shapes themselves are package v1's
// (internal/api/v1), shared with the CLI; the document is reflected from
// them, and a test holds every schema in it to that package.
//
// Handlers validate, call, and convert errors at the boundary only: a
// request that fails validation writes nothing. Everything the API needs
// is passed in through Deps as small interfaces it owns (the store methods
// it uses, the coordinator's Terminate and Mark), so it imports neither the
// coordinator nor a storage engine. The start estimate of why comes the
// same way, as a function (Deps.Estimate), because it replays the group
// through both.
//
// It may import internal/api/v1, internal/domain, internal/store (types
// and error classes), internal/scheduler and its framework (for the "why"
// dry run), the Prometheus client's HTTP handler, and the standard
// library.
package api
