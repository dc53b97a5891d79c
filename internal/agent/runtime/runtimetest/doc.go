// Package runtimetest is what the tests of every runtime share: Recorder,
// a Sink that tests wait on; Eventually; and Run, the conformance suite of
// promises the runtime.Runtime interface makes (an id is created once,
// Destroy of an unknown id is a no-op, Live is sorted and leaves out
// nothing started, an exit is recorded and reported once, Close ends
// everything and refuses what follows). Each runtime's tests call Run with
// a Kit that says how to open one and which of its images sleep and exit.
//
// It is for tests only. It may import internal/agent/runtime,
// internal/domain and the standard library.
//
// Imports: internal/agent/runtime, internal/domain.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package runtimetest
