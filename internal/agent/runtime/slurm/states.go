package slurm

import (
	"fmt"
	"strings"
)

// Phase is what a SLURM job state means for the kernel the job runs.
type Phase int

const (
	// Queued: the job has not run yet (or SLURM paused it). A kernel that
	// has not started stays in creation; one that has keeps running.
	Queued Phase = iota
	// Running: the job runs; the kernel starts on its first entry.
	Running
	// Ended: the job is over; the kernel ends with the status file's exit
	// code, or SLURM's when there is none.
	Ended
)

func (p Phase) String() string {
	switch p {
	case Queued:
		return "not yet running"
	case Running:
		return "running"
	default:
		return "ended"
	}
}

// StateRule is one row of the mapping from a job state, as squeue's
// %T (long) and %t (compact) name it, to a Phase.
type StateRule struct {
	State, Code string
	Phase       Phase
	// Note is why, for the documentation; Message, when set, is how an
	// ended kernel's exit is explained.
	Note, Message string
	// Failure marks an end SLURM imposed (preemption, a time limit, a node
	// lost): the kernel did not finish its work, so its exit is never a
	// success, even when the kernel, sent SIGTERM, exited 0 and its status
	// file says so. The manager judges outcomes by the code alone.
	Failure bool
}

// States is seed 002's mapping, extended to every state squeue can print.
// A state not listed is Ended, as the seed says of "other". Where it
// differs from the seed it says so: the seed's regex folds CF into F and
// RQ/RS into R; here a job still configuring or requeued has not run yet,
// so it is Queued, not failed.
var States = []StateRule{
	{State: "PENDING", Code: "PD", Phase: Queued, Note: "waiting for resources or priority; the reason is shown as queued in SLURM: <reason>"},
	{State: "SUSPENDED", Code: "S", Phase: Queued, Note: "paused by scontrol suspend or gang scheduling; a kernel that started stays running and resumes"},
	{State: "STOPPED", Code: "ST", Phase: Queued, Note: "paused by scancel --signal=STOP, still holding its allocation; a kernel that started stays running and resumes on SIGCONT"},
	{State: "CONFIGURING", Code: "CF", Phase: Queued, Note: "allocated, nodes booting (seed: F)"},
	{State: "REQUEUED", Code: "RQ", Phase: Queued, Note: "requeued, will run again (seed: R)"},
	{State: "REQUEUE_HOLD", Code: "RH", Phase: Queued, Note: "requeued and held"},
	{State: "REQUEUE_FED", Code: "RF", Phase: Queued, Note: "requeued by a federation"},
	{State: "RESV_DEL_HOLD", Code: "RD", Phase: Queued, Note: "held after its reservation was deleted"},
	{State: "RUNNING", Code: "R", Phase: Running, Note: "kernel_started on the first entry, StartedAt then"},
	{State: "COMPLETING", Code: "CG", Phase: Running, Note: "some processes are still finishing"},
	{State: "RESIZING", Code: "RS", Phase: Running, Note: "running, its allocation changing"},
	{State: "SIGNALING", Code: "SI", Phase: Running, Note: "running, being signalled"},
	{State: "STAGE_OUT", Code: "SO", Phase: Running, Note: "finishing its burst buffer stage-out"},
	{State: "COMPLETED", Code: "CD", Phase: Ended, Note: "exit code 0 from SLURM; the status file still wins"},
	{State: "FAILED", Code: "F", Phase: Ended, Note: "non-zero exit or launch failure", Failure: true},
	{State: "PREEMPTED", Code: "PR", Phase: Ended, Note: "preempted", Message: "preempted by SLURM", Failure: true},
	{State: "CANCELLED", Code: "CA", Phase: Ended, Note: "scancel, by Destroy or by hand (Destroy reports the kernel's own code)", Message: "cancelled in SLURM", Failure: true},
	{State: "TIMEOUT", Code: "TO", Phase: Ended, Note: "ran past its --time", Message: "ran past its SLURM time limit", Failure: true},
	{State: "NODE_FAIL", Code: "NF", Phase: Ended, Note: "its node failed", Message: "its SLURM node failed", Failure: true},
	{State: "OUT_OF_MEMORY", Code: "OOM", Phase: Ended, Note: "ran out of memory", Message: "out of memory in SLURM", Failure: true},
	{State: "BOOT_FAIL", Code: "BF", Phase: Ended, Note: "its node did not boot", Message: "its SLURM node failed to boot", Failure: true},
	{State: "DEADLINE", Code: "DL", Phase: Ended, Note: "missed its --deadline", Message: "missed its SLURM deadline", Failure: true},
	{State: "SPECIAL_EXIT", Code: "SE", Phase: Ended, Note: "requeued in a held special-exit state"},
}

// Rule returns the rule for state, given by its long or compact name; an
// unknown state is Ended.
func Rule(state string) StateRule {
	for _, r := range States {
		if r.State == state || r.Code == state {
			return r
		}
	}
	return StateRule{State: state, Code: state, Phase: Ended, Note: "any state not listed above"}
}

// RenderStates writes docs/slurm-states.md from States, so the table in
// the documentation cannot drift from the code.
func RenderStates() string {
	var b strings.Builder
	b.WriteString("# SLURM job states and kernels\n\n")
	b.WriteString("Generated from `internal/agent/runtime/slurm/states.go` by\n")
	b.WriteString("`go test ./internal/agent/runtime/slurm/ -run TestStatesDocIsCurrent -update`; do not edit.\n\n")
	b.WriteString("The slurm runtime polls every job it owns with one `squeue` call per poll\n")
	b.WriteString("interval and maps each job's state so (seed 002, interLink's SLURM plugin):\n\n")
	b.WriteString("| squeue %T | %t | kernel | note |\n|---|---|---|---|\n")
	for _, r := range States {
		note := r.Note
		if r.Message != "" {
			note += fmt.Sprintf("; message %q", r.Message)
		}
		if r.Failure {
			note += "; never a success"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.State, r.Code, r.Phase, note)
	}
	b.WriteString("| any other | | ended | as seed 002's \"Unknown\" |\n\n")
	b.WriteString(`An ended kernel's exit code is, by priority: the job's status file
(` + "`run-<kernel>.status`" + `, written by the job script) and then SLURM's exit code
(squeue's exit_code, else ` + "`scontrol show job`" + `), which is then written to the
status file too. A job killed by a signal reports 128 plus the signal.
A state marked "never a success" is an end SLURM imposed: there a code of 0
(a kernel that exited cleanly on SLURM's SIGTERM) is reported as 1, with the
state's message, so the session's outcome is a failure.

Failures:

- ` + "`squeue`" + ` fails: the kernels whose status file exists end with its code;
  the others keep their state. A slurmctld outage never by itself ends a
  running kernel.
- A job id that neither squeue nor ` + "`scontrol show job`" + ` knows (purged after
  MinJobAge) ends with its status file; without one, after the lost grace,
  the kernel ends with code 255 as lost, never silently running.
- A job that ends without ever running ends its kernel, never started, with
  SLURM's code (1 when SLURM says 0), so the manager learns of it.
- The cluster in CI has no accounting (no slurmdbd), so ` + "`sacct`" + ` is not
  asked; squeue, scontrol and the status files are the sources.
`)
	return b.String()
}
