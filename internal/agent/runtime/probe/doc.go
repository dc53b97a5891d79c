// Package probe evaluates a kernel's readiness probes (seed 002, after
// interLink's SLURM plugin): HTTP GET and exec checks run every period
// while the kernel runs; a probe is SUCCESS once its consecutive successes
// reach its success threshold and FAILED_THRESHOLD once its consecutive
// failures reach its failure threshold. A kernel is ready only when every
// probe is SUCCESS; one that has not run yet or cannot run is UNKNOWN, and
// UNKNOWN is not ready, so readiness fails safe.
//
// It owns the probe spec, its validation and the evaluation loop; runtimes
// start a Set when a kernel starts running and stop it when the kernel
// ends. It may import internal/domain and the standard library only.
//
// Imports: internal/domain.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package probe
