// Package domain owns the vocabulary every other package speaks: identifiers,
// exact resource quantities (ResourceSlots), session, kernel, agent and
// resource-group records, their statuses, and the lifecycle and promotion
// handler tables of seed 001 expressed as data, and seed 003's object
// (resource group) and application (job) state tables.
//
// Slot types are interned in a Registry, which is built and passed down:
// there is no global one, so a test or a simulation can run its own. A
// Quantity is an exact int64 in the slot kind's stored unit (thousandths
// for count and shares, bytes for bytes), so sums and comparisons never
// round. Parsing accepts 2, 0.5, 4g, 512m and 1.5G; negative, NaN,
// overflowing, over-precise, suffix-on-a-count and unknown-slot input are
// errors naming the slot. Arithmetic saturates rather than wraps. Vec is a
// dense vector by slot index for the scheduler's hot paths; a missing slot
// is zero in a request and MaxQuantity ("unlimited") in a policy limit.
//
// Statuses are small integer enums with names. Seed 001's lifecycle table
// (success / need_retry / expired / give_up targets) and promotion table
// (checked kernel statuses, ALL / ANY / NOT_ANY) are data in transitions.go,
// with the legal kernel edges; docs/states.md is rendered from them by a
// test that fails when the file is stale, so the drawing cannot drift.
//
// It performs no I/O, reads no clock and starts no goroutines, so it may be
// imported by every package and imports only the standard library.
//
// Imports: none.
package domain
