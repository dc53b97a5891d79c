// Package scheduler runs one scheduling round for one resource group:
// validate → sequence → select → reserve, over a framework.Snapshot, and
// returns a framework.Plan. It applies the group's head-of-line policy
// (skip, block, or reserve with backfill through framework.Backfill). It
// owns the pipeline and the explicit plugin Registry; the plugins live in
// validate, sequence and selector. gang.go places a job's members as one
// gang of at least min-available, all or none in the round (seed 004).
// In a group that preempts, a session that cannot be placed for capacity
// asks framework.Preemptor for victims before it would take a
// reservation; it then waits, unplaced, for their release.
//
// It is pure — no I/O, clock, goroutines or randomness — so the same
// snapshot always gives the same plan. It may import internal/domain and
// internal/scheduler/{framework,validate,sequence,selector}.
//
// Imports: internal/domain, internal/scheduler/framework,
// internal/scheduler/validate, internal/scheduler/sequence,
// internal/scheduler/selector.
package scheduler
