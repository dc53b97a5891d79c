// Package kernelstate is the kernel state engine: it turns an agent event
// (domain.KernelEvent, the record runtimes emit and the wire carries) into
// a change of one kernel, only along the legal kernel edges of
// internal/domain. A duplicate, stale (older agent epoch), misdirected or
// out-of-order event yields no change, so events may be lost, repeated or
// reordered without harm (DESIGN.md invariant 4).
//
// It is pure: it may import internal/domain and the standard library only.
// The coordinator loads kernels, calls Apply, and writes the changes with
// the store's guarded updates.
//
// Imports: internal/domain.
package kernelstate
