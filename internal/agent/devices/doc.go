// Package devices finds the accelerators an agent hands out one by one:
// NVIDIA GPUs through NVML, or fake devices declared for tests and
// development ("cuda:4"). It owns discovery only; what a device is and
// how grants are packed is internal/domain's, and what a kernel sees of
// its grants is the runtimes'.
//
// NVML is loaded at run time (nvml.go dlopens libnvidia-ml when asked),
// so a binary built with cgo starts where no driver exists; built without
// cgo it says NVML is unavailable.
//
// It may import internal/domain and the standard library.
//
// Imports: internal/domain.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package devices
