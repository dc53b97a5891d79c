// Package planguard decides, in memory, which placements of a plan still
// hold against rows an engine has just read under its write lock, and what
// the agents' occupancy becomes; it also does the arithmetic of releasing
// kernels. Keeping the decision apart from SQL keeps it a pure function
// of the rows; sqlstore only reads, locks and writes.
//
// It may import internal/store, its codec, internal/domain,
// internal/scheduler/framework and the standard library. It does no I/O.
//
// Imports: internal/store, internal/store/internal/codec, internal/domain,
// internal/scheduler/framework.
package planguard
