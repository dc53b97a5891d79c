// Package framework owns the scheduler's shared vocabulary: the per-group
// Snapshot a round reads, the Plan it returns, typed Blockers that explain
// why a session waits, the round State that plugins reserve into, the agent
// index that answers ranked selectors without a scan, the Backfill book of
// a round's reservations under head-of-line reserve (shadow times from the
// Snapshot's holdings, and the holds that keep later sessions off reserved
// slots), the Preemptor that chooses victims of lower priority bands
// under a group's preemption guards (min runtime, budget per window, no
// cycles), and the plugin extension points (Validator, Sequencer, Selector,
// and Ranker, which a Selector may implement to be answered from the
// index).
//
// It is pure: no I/O, no clock reads, no goroutines, no map-order dependence.
// It may import only internal/domain and the standard library; the plugin
// packages (validate, sequence, selector) and internal/scheduler import it.
//
// Imports: internal/domain.
package framework
