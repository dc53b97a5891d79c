// Package sim is a runtime that runs no processes: pulls, creations, runs
// and destroys are timers on an injected Clock, with durations, failure
// rates and exit codes drawn from a generator seeded by the configuration,
// so a simulation can be replayed exactly. It backs benchmarks and
// simulations of many agents, and coordinator tests that want kernels
// without processes or sleeps.
//
// It owns the Clock interface, RealClock, and ManualClock, which tests and
// faster-than-real-time simulations advance by hand.
//
// Hundreds of sim runtimes fit in one process: a kernel is a small struct
// and at most one pending timer, and a runtime holds no goroutine while idle
// (its event delivery goroutine exists only while events are queued).
//
// It may import internal/agent/runtime, internal/domain and the standard
// library; nothing from the scheduler, the store or the coordinator.
//
// Imports: internal/agent/runtime, internal/domain.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package sim
