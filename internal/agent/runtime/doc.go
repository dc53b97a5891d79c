// Package runtime owns the contract between an agent daemon and whatever
// actually runs kernels: the Runtime interface, the kernel Spec the agent
// hands over, the KernelState values a runtime reports back, the Sink
// through which it reports domain.KernelEvent records (the one event
// vocabulary from runtime to kernel state engine), the typed errors callers
// test with errors.Is, Outbox, the ordered non-blocking event delivery
// every runtime shares, and OpenLog for the output log runtimes keep in a
// kernel's directory.
//
// It also owns the books every runtime keeps, so the interface's promises
// are kept once: Table, the kernels by id (created once with later Creates
// waiting for the first, started and exited each recorded and reported
// once, listed by Live, removed by Destroy, refused after Close), and
// Images, the pulled images (pulled once, concurrent pulls waiting for it),
// and Shutdown, the order in which a Close ends them.
// A runtime keeps only what is its own: how a kernel starts and stops and
// where its output goes.
//
// Implementations live in subpackages: process (real OS processes), docker
// (containers on a Docker engine) and sim (timers only, for benchmarks and
// simulations); runtimetest holds the conformance suite each of them runs.
//
// It may import internal/domain and the standard library. Runtime packages
// may also import well-kept libraries (golang.org/x/sys), but nothing from
// the scheduler, the store or the coordinator: a runtime knows kernels, not
// sessions' lifecycles.
//
// Imports: internal/domain.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package runtime
