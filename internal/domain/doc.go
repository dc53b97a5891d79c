// Package domain owns the vocabulary every other package speaks: identifiers,
// exact resource quantities (ResourceSlots), session, kernel, agent and
// resource-group records, their statuses, and the lifecycle and promotion
// handler tables of seed 001 expressed as data, and seed 003's object
// (resource group) and application (job) state tables.
//
// It performs no I/O, reads no clock and starts no goroutines, so it may be
// imported by every package and imports only the standard library.
package domain
