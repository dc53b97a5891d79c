// Command gpucheck proves the agent's device handling on a machine with
// real NVIDIA GPUs: it starts a manager and agents from a sokovan binary
// built with cgo, runs sessions that ask for GPUs, and compares what the
// kernels see through CUDA and nvidia-smi with what the manager granted.
// scripts/gpu-check builds both binaries and runs it; docs/OPERATIONS.md
// records what it printed on a real GPU.
//
// The same binary is the probe each kernel runs (gpucheck probe): it
// loads the CUDA driver with dlopen, so it builds without CUDA's headers
// and runs wherever a driver is installed, lists the devices CUDA lets it
// see, and holds a context with memory allocated so that nvidia-smi shows
// the kernel as a process on its GPU.
//
// It talks to the manager only over the public API in package v1's types
// and may import internal/api/v1 alone of the project's packages: it
// checks the system from outside, as an operator would.
//
// Imports: internal/api/v1.
package main
