// Package simulate replays a workload through the production scheduling
// path faster than real time: the real coordinator (its Cycle and Sweep,
// handlers and applier, driven with an injected clock), the real
// scheduler and a real SQLite store in a temporary directory, against sim
// runtime agents called in-process, on a virtual clock that jumps from one
// due event to the next without sleeping.
//
// It owns the workload format (JSONL, docs/SIMULATION.md), the seeded
// workload generator, importers of public trace layouts, the simulation
// loop, the report (wait percentiles per size class, utilisation over
// time, Jain's fairness, bounded slowdown, gang waits, makespan) and its
// JSON, table and HTML renderings, and what-if comparison of settings.
//
// It also owns the start estimate: Estimate replays a live group (Live,
// read from a store by LoadLive) forward through the same loop and says
// when each queued session starts; the manager hands Estimator to its API
// for why's estimated_start.
//
// Submissions take the production path: each workload session is
// admitted by internal/admit as the API admits a request (defaults, type
// rules, hooks, max_slots, and max_pending_sessions counted by the store),
// and a refusal is counted as REJECTED. A workload's time_limit_s is the
// session's time limit (through its type's OnSchedule hook, in
// admission), and the coordinator's EndDue ends it; the loop only wakes at
// each limit's instant so the end is exact rather than at the next sweep.
//
// agents.go is the one file that speaks the coordinator's agent port and
// the runtimes' and kernel state engine's event types.
//
// It may import internal/admit, internal/coordinator, internal/hook, internal/scheduler, internal/store
// (and store/sqlite), internal/agent/runtime (and runtime/sim),
// internal/kernelstate and internal/domain. Nothing imports it except
// cmd/sokovan.
//
// Imports: internal/admit, internal/coordinator, internal/hook,
// internal/scheduler, internal/scheduler/framework, internal/store,
// internal/store/sqlite, internal/agent/runtime, internal/agent/runtime/sim,
// internal/kernelstate, internal/domain.
package simulate
