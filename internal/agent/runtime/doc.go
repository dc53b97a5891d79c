// Package runtime owns the contract between an agent daemon and whatever
// actually runs kernels: the Runtime interface, the kernel Spec the agent
// hands over, the KernelState values a runtime reports back, the Sink
// through which it reports domain.KernelEvent records (the one event
// vocabulary from runtime to kernel state engine), the typed errors callers
// test with errors.Is, Outbox, the ordered non-blocking event delivery
// every runtime shares, and OpenLog for the output log runtimes keep in a
// kernel's directory.
//
// Implementations live in subpackages: process (real OS processes), docker
// (containers on a Docker engine) and sim (timers only, for benchmarks and
// simulations).
//
// It may import internal/domain and the standard library. Runtime packages
// may also import well-kept libraries (golang.org/x/sys), but nothing from
// the scheduler, the store or the coordinator: a runtime knows kernels, not
// sessions' lifecycles.
package runtime
