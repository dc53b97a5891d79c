package domain

import (
	"errors"
	"fmt"
	"time"
)

// JobID names a job: a group of separately submitted sessions (a Spark
// driver and its executors, a parameter server and its workers) scheduled
// as a gang of at least MinAvailable members.
type JobID string

// JobState is a job's application state (seed 003).
type JobState uint8

// Job states, after seed 003's application states. Current YuniKorn has
// dropped Starting (YUNIKORN-2495); the seed keeps it, and so do we: a
// job with one allocation sits there until a second arrives or the
// Starting timeout passes.
const (
	JobNew JobState = iota + 1
	JobAccepted
	JobStarting
	JobRunning
	JobCompleting
	JobCompleted
	JobExpired
	JobFailing
	JobFailed
	JobRejected
)

var jobStateNames = [...]string{JobNew: "NEW", JobAccepted: "ACCEPTED", JobStarting: "STARTING",
	JobRunning: "RUNNING", JobCompleting: "COMPLETING", JobCompleted: "COMPLETED", JobExpired: "EXPIRED",
	JobFailing: "FAILING", JobFailed: "FAILED", JobRejected: "REJECTED"}

func (s JobState) String() string {
	if int(s) < len(jobStateNames) && s != 0 {
		return jobStateNames[s]
	}
	return fmt.Sprintf("JobState(%d)", uint8(s))
}

// JobStates lists every job state in order.
func JobStates() []JobState {
	out := make([]JobState, 0, len(jobStateNames)-1)
	for i := range jobStateNames[1:] {
		out = append(out, JobState(i+1))
	}
	return out
}

// ParseJobState reads a state name as String writes it.
func ParseJobState(name string) (JobState, error) {
	for i, n := range jobStateNames {
		if n == name && i != 0 {
			return JobState(i), nil
		}
	}
	return 0, fmt.Errorf("unknown job state %q", name)
}

// Final reports whether nothing moves the job any more. COMPLETED is not
// final: it still expires.
func (s JobState) Final() bool { return s == JobExpired || s == JobFailed || s == JobRejected }

// Admits reports whether new members may join: a job that is ending or
// has ended takes none.
func (s JobState) Admits() bool {
	switch s {
	case JobNew, JobAccepted, JobStarting, JobRunning, JobCompleting:
		return true
	}
	return false
}

// JobEvent moves a job between states (seed 003's application events).
type JobEvent string

// Job events.
const (
	JobReject   JobEvent = "Reject"
	JobRun      JobEvent = "Run"
	JobComplete JobEvent = "Complete"
	JobFail     JobEvent = "Fail"
	JobExpire   JobEvent = "Expire"
)

// JobTransition is one row of the job state table. Why says what in the
// job's members raises the event, for the generated docs.
type JobTransition struct {
	Event JobEvent
	From  JobState
	To    JobState
	Why   string
}

var jobTransitions = []JobTransition{
	{JobReject, JobNew, JobRejected, "its first member is refused at admission (quota, group state, invalid)"},
	{JobRun, JobNew, JobAccepted, "first member added"},
	{JobRun, JobAccepted, JobStarting, "first allocation"},
	{JobRun, JobStarting, JobRunning, "a second allocation, or the Starting timeout passed"},
	{JobRun, JobCompleting, JobRunning, "a member is pending or running again"},
	{JobComplete, JobAccepted, JobCompleting, "every member ended before any was allocated"},
	{JobComplete, JobStarting, JobCompleting, "nothing pending or running"},
	{JobComplete, JobRunning, JobCompleting, "nothing pending or running"},
	{JobComplete, JobCompleting, JobCompleted, "the completing timeout passed"},
	{JobExpire, JobCompleted, JobExpired, "the retention passed"},
	{JobFail, JobNew, JobFailing, "cancelled"},
	{JobFail, JobAccepted, JobFailing, "permit timed out with no real allocation, a member failed under failure_policy fail, or cancelled"},
	{JobFail, JobStarting, JobFailing, "permit timed out with no real allocation, a member failed under failure_policy fail, or cancelled"},
	{JobFail, JobRunning, JobFailing, "permit timed out with no real allocation, a member failed under failure_policy fail, or cancelled"},
	{JobFail, JobCompleting, JobFailing, "cancelled"},
	{JobFail, JobFailing, JobFailed, "every member has ended"},
}

// JobTransitions returns a copy of the table, in order.
func JobTransitions() []JobTransition { return append([]JobTransition(nil), jobTransitions...) }

// ErrIllegalJobEvent marks an event the table has no row for.
var ErrIllegalJobEvent = errors.New("illegal job state change")

// NextJobState looks (event, from) up in the table.
func NextJobState(e JobEvent, from JobState) (JobState, error) {
	return nextState(jobTransitions, func(t JobTransition) (JobEvent, JobState, JobState) {
		return t.Event, t.From, t.To
	}, e, from, ErrIllegalJobEvent)
}

// FailurePolicy says what a job does when a member fails or its permit
// times out: wait (the failed member's slot may be filled again and the
// gang waits at PENDING) or fail (the whole job fails and its members are
// ended), YuniKorn's Soft and Hard gang styles.
type FailurePolicy string

// Failure policies.
const (
	FailureWait FailurePolicy = "wait"
	FailureFail FailurePolicy = "fail"
)

// ParseFailurePolicy checks a policy name.
func ParseFailurePolicy(s string) (FailurePolicy, error) {
	switch FailurePolicy(s) {
	case FailureWait, FailureFail:
		return FailurePolicy(s), nil
	}
	return "", fmt.Errorf("unknown failure policy %q (want wait or fail)", s)
}

// Job timeouts that seed 003 fixes; the coordinator's configuration may
// change them.
const (
	DefaultJobStartingTimeout   = 5 * time.Minute
	DefaultJobCompletingTimeout = 30 * time.Second
	DefaultJobRetention         = 24 * time.Hour
	// DefaultPermitTimeout is scheduler-plugins coscheduling's permit wait.
	DefaultPermitTimeout = 60 * time.Second
)

// Job groups sessions that are scheduled together.
type Job struct {
	ID    JobID
	Name  string
	Owner Owner
	// MinAvailable members must be placed together before any starts.
	MinAvailable int
	// PermitTimeout bounds how long placed members wait at Permit for the
	// rest of the gang before every reservation is released.
	PermitTimeout  time.Duration
	FailurePolicy  FailurePolicy
	State          JobState
	StateReason    string
	StateChangedAt time.Time
	CreatedAt      time.Time
}

// JobHistoryEntry records one job state change and the event that raised
// it. A job's moves carry no result and are never merged.
type JobHistoryEntry = Record[JobID, JobState, JobEvent, Result]
