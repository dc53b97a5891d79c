// Package agent is the agent daemon: it registers with a manager,
// heartbeats with its kernels and images, serves the manager's calls
// (check_and_pull, create_kernels, destroy_kernel, kernels, logs) over
// HTTP/JSON, and forwards its runtime's events in order, at least once,
// retrying until the manager has them. Kernels run in a runtime.Runtime
// (process, docker, slurm, sim) chosen by the caller. It tells the manager
// at registration whether it runs a session's own command
// (Config.AllowsCommand), and serves logs from a byte offset so followers
// read only what is new.
//
// It may import internal/domain, internal/agentrpc and
// internal/agent/runtime; never the manager's packages (coordinator,
// scheduler, store, kernelstate, agentgw). The Never links line below, on
// the daemon and on each of its subpackages, holds them to that through
// every package they link (internal/archtest checks it with go list).
//
// Imports: internal/domain, internal/agentrpc, internal/pki, internal/agent/runtime.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package agent
