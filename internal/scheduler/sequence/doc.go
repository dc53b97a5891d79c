// Package sequence holds the scheduler's Sequencer plugins, which order the
// sessions of one priority band: FIFO, LIFO, DRF (dominant resource
// fairness, updated as the round places sessions) and FairShare (SLURM's
// classic factor over decayed usage history against shares). Every order ends in a
// tie-break on created time, then session id, so it never depends on input
// or map order.
//
// It may import internal/domain and internal/scheduler/framework only.
//
// Imports: internal/domain, internal/scheduler/framework.
package sequence
