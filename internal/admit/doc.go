// Package admit owns session admission: turning a request for a session
// into the records to store, and refusing one that could not or may not
// run. It is written once and called by every path that creates a
// session: the API's submit, a deployment's routes (the controller calls
// it with the deployment's spec) and the simulator's replayed workload.
//
// Admission is, in order: the request's own fields (name, type, image,
// architecture, resources, cluster mode and size, priority, start time,
// time limit, command, environment); then what reads the store: the
// resource group (it must exist and admit sessions, and run the type),
// the session type's hook (internal/hook: the group's default and
// maximum time limit), the group's agents (one of them must be able to
// run the image and the command, whole devices stay whole, and unless
// the group has none that may stay, one must be large enough to hold a
// kernel), the group's
// defaults and minimums filling the request, the dependencies and the
// designated agents; and last, at Submit, the owner's policies: max_slots
// over the whole session, and max_pending_sessions, which the store keeps
// exactly in the transaction that creates the session. Kernels get their
// roles (the first is main) and their ids (<session>-k<index>) here.
//
// A refusal is an *Error: a class (bad request, forbidden, conflict, too
// many) and the request field at fault, which the API maps to its status
// codes at its boundary. Anything else is a fault of the store.
//
// What it reads and the one write it makes go through Store, a port the
// store engines satisfy; dependencies are resolved by the caller
// (Request.Resolve), because which sessions a submitter may name is the
// API's to decide.
//
// It may import internal/domain, internal/hook, internal/store (for its
// filters, limits and error classes), internal/clock and the standard
// library; never the API, the deployment controller, the coordinator, the
// scheduler or an engine.
//
// Imports: internal/clock, internal/domain, internal/hook, internal/store.
// Never links: internal/api/..., internal/deploy/..., internal/simulate/...,
// internal/coordinator/..., internal/scheduler, internal/store/sqlstore/...,
// internal/store/sqlite/..., internal/store/postgres/....
package admit
