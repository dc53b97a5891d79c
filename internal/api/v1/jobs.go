package v1

import "time"

// CreateJobRequest creates a job: a gang of sessions submitted one by one
// with "job" on POST /v1/sessions.
type CreateJobRequest struct {
	// Name is free text; a job is also found by it among the caller's.
	Name string `json:"name,omitempty"`
	// MinAvailable members must be placed together before any starts
	// (default 1).
	MinAvailable *int `json:"min_available,omitempty"`
	// PermitTimeout is how long placed members wait for the rest of the
	// gang before every reservation is released, a Go duration (default
	// "60s").
	PermitTimeout string `json:"permit_timeout,omitempty"`
	// FailurePolicy is wait (default: a failed member or a permit timeout
	// leaves the job waiting) or fail (the job fails and its members end).
	FailurePolicy string `json:"failure_policy,omitempty" enum:"wait,fail"`
}

// Job is a job with its members and state history.
type Job struct {
	ID             string      `json:"id"`
	Name           string      `json:"name"`
	Owner          string      `json:"owner"`
	MinAvailable   int         `json:"min_available"`
	PermitTimeout  string      `json:"permit_timeout"`
	FailurePolicy  string      `json:"failure_policy"`
	State          string      `json:"state"`
	StateReason    string      `json:"state_reason"`
	StateChangedAt time.Time   `json:"state_changed_at"`
	CreatedAt      time.Time   `json:"created_at"`
	Members        []JobMember `json:"members"`
	// Submitted counts members not ended; Placed those holding a placement
	// (SCHEDULED to RUNNING), which Permit compares with min_available.
	Submitted int          `json:"submitted"`
	Placed    int          `json:"placed"`
	History   []JobHistory `json:"history"`
}

// JobMember is one session of a job.
type JobMember struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// JobHistory is one state change of a job: the seed 003 event and what
// raised it.
type JobHistory struct {
	At      time.Time `json:"at"`
	Event   string    `json:"event"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Message string    `json:"message"`
}
