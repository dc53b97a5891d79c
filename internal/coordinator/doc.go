// Package coordinator drives every session from PENDING to an end, in the
// handler pattern of seed 001: lifecycle handlers (ScheduleNewSessions,
// PrepareSessions, StartSessions, TerminateSessions) attempt work and report
// successes, failures and skipped sessions; promotion handlers
// (PromoteToPrepared, PromoteToRunning, PromoteToTerminated,
// DetectTermination) move sessions whose kernels meet ALL / ANY / NOT_ANY;
// one generic applier turns results into guarded status changes, try
// counts, residence-bound expiry and history. It also applies agent events
// through the kernel state engine and handles agent loss.
//
// Each job has its file, so one can be read without the others:
// coordinator.go builds and runs it (New, Configure, Run, Cycle, Mark;
// Run also wakes at the next due time: time limits, drain deadlines);
// handlers.go holds the scheduling round and the promotion handlers, and
// agentwork.go the lifecycle handlers that call agents (PrepareSessions,
// StartSessions, TerminateSessions); calls.go makes those calls, all
// agents at once, records each session's result as its own calls return,
// and isolates an agent whose call timed out until a probe finds it
// answering; decide.go names
// each session's outcome as a pure function of values, and apply.go carries
// those outcomes out as status changes and history; groups.go reads what
// resource groups set (max_retries, residence bounds); events.go applies
// agent events; settle.go takes agents' kernel reports and restarts;
// sweep.go handles agent loss; due.go ends running sessions their type's
// hook says are done (time limit, idle timeout); terminate.go ends
// sessions users stop; preempt.go records the preemptions a round's plan
// applied (history on victim, preemptor and requeued attempt; metrics) and
// when a preempting group's idle round must run again;
// metrics.go holds the handlers' series and collector.go the cluster's
// (agents' capacity and occupancy, users' holdings), read from the store
// at scrape time.
// idle.go decides, from the change feed and the groups' generations,
// when a group's scheduling round could only repeat its last one and is
// skipped; touched.go follows the feed for the promotion handlers, which
// then check only the sessions it names, and for the lifecycle handlers,
// which list their statuses again only once a session moved into them.
// jobs.go moves jobs through seed 003's application states and holds their
// members at Permit; drain.go ends what remains on agents past their drain
// deadline; metrics_gang.go holds seed 004's series.
//
// It owns the small interfaces it needs from the store (Store) and from
// agents (Agents), and takes a clock, so tests drive it with an injected
// clock and in-process agents with fault injection. It may import
// internal/domain, internal/hook, internal/kernelstate,
// internal/scheduler (and its framework), internal/store for its shared types and errors, and
// Prometheus client_golang.
//
// Imports: internal/clock, internal/domain, internal/hook, internal/kernelstate,
// internal/scheduler, internal/scheduler/framework, internal/store,
// github.com/prometheus/client_golang/....
package coordinator
