// Package slurm is an agent runtime that runs each kernel as a batch job on
// a SLURM cluster (seed 002, after interLink's SLURM plugin): Create submits
// a generated script with sbatch and returns; one squeue call per poll
// interval, for every job of the runtime at once, moves kernels through the
// mapping table in states.go; Destroy is scancel, polite and then forced.
//
// It owns the job script and its status file (the kernel's exit code,
// written by the script and read before SLURM's own code), the per-kernel
// state file in the work directory that lets Recover re-adopt jobs after an
// agent restart, the SLURM state table and the reading of the SLURM CLIs
// (sbatch, squeue, scontrol, scancel, sinfo), run through os/exec at paths
// Commands may override.
//
// A kernel whose job is queued is still being created: Live leaves it out
// and kernel_started is reported only once SLURM runs the job; Queued says
// why it waits, and Waiting hands that to the agent's heartbeats. Capacity
// reads sinfo afresh, so each heartbeat carries the partition as it is
// now. A slurmctld outage never by itself ends a running kernel.
//
// A job's --time is its session's time limit (runtime.Spec.TimeLimit),
// rounded up to whole minutes, or Config.TimeLimit (--slurm-time) when the
// session has none: the manager ends the session at its limit, and SLURM
// bounds the job too should the manager be away.
//
// GPUs are counted, not chosen: cuda.device N (rounded up) becomes
// --gres=gpu:N, and SLURM picks the GPUs and sets CUDA_VISIBLE_DEVICES
// itself, so the manager's device grants are not passed on. A kernel
// asking cuda.shares is refused as an invalid spec: SLURM shares a GPU
// only through MPS or shard GRES that each site configures its own way,
// and rounding a share up to a whole GPU would give the kernel more than
// it is charged for. Capacity never advertises cuda.shares, so only a
// hand-set capacity could send one here.
//
// It may import internal/agent/runtime, internal/domain and the standard
// library; nothing from the coordinator, the scheduler or the store.
//
// Imports: internal/agent/runtime, internal/domain.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package slurm
