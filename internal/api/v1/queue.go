package v1

import "time"

// Queue is the answer of GET /v1/resource-groups/{name}/queue: the group's
// PENDING sessions in the order the next scheduling round would try them.
type Queue struct {
	ResourceGroup string `json:"resource_group"`
	Sequencer     string `json:"sequencer"`
	// Pending counts every PENDING session of the group; Hidden those of
	// other users, which a user's answer leaves out of Items.
	Pending int `json:"pending"`
	Hidden  int `json:"hidden"`
	// Items are the sessions the caller may see (all of them for an
	// admin), each with its position in the whole queue.
	Items []QueueEntry `json:"items"`
}

// QueueEntry is one PENDING session and what the round would do with it.
type QueueEntry struct {
	// Position counts from 1 over the whole queue, other users' sessions
	// included, so a user sees how many wait ahead.
	Position int    `json:"position"`
	ID       string `json:"id"`
	Name     string `json:"name"`
	Owner    string `json:"owner"`
	Priority int    `json:"priority"`
	// Outcome is what the round would do: start (placed now), wait, or
	// never (it can never run and is about to be cancelled).
	Outcome        string            `json:"outcome" enum:"start,wait,never"`
	CreatedAt      time.Time         `json:"created_at"`
	RequestedSlots map[string]string `json:"requested_slots"`
	ClusterSize    int               `json:"cluster_size"`
	Blockers       []Blocker         `json:"blockers"`
	// FairShare is the session's standing in a fairshare group; absent in
	// other groups.
	FairShare *FairShareFactor `json:"fair_share,omitempty"`
	// EstimatedStart is when a replay of the group says the session
	// starts, as in why: an estimate, absent when the manager has no
	// estimator or the session cannot start within a week.
	EstimatedStart *time.Time `json:"estimated_start,omitempty"`
}

// Usage is the answer of GET /v1/me/usage: what the caller's live
// sessions hold and ask for, against each policy that limits the caller.
type Usage struct {
	User string `json:"user"`
	// Occupied is what the caller's sessions that hold resources
	// (SCHEDULED to TERMINATING) requested, all kernels together; Pending
	// what the PENDING ones ask for.
	Occupied        map[string]string `json:"occupied"`
	Pending         map[string]string `json:"pending"`
	RunningSessions int               `json:"running_sessions"`
	PendingSessions int               `json:"pending_sessions"`
	// Limits are the user's, project's and domain's policies that exist,
	// each with what its whole scope holds.
	Limits []UsageLimit `json:"limits"`
}

// UsageLimit is one policy and its scope's use of it.
type UsageLimit struct {
	Scope string `json:"scope" enum:"user,project,domain"`
	Name  string `json:"name"`
	// MaxSlots are the policy's limits; Used what the scope's sessions
	// that hold resources requested, for the same slots.
	MaxSlots              map[string]string `json:"max_slots"`
	Used                  map[string]string `json:"used"`
	MaxConcurrentSessions int               `json:"max_concurrent_sessions"`
	ConcurrentSessions    int               `json:"concurrent_sessions"`
	MaxPendingSessions    int               `json:"max_pending_sessions"`
	PendingSessions       int               `json:"pending_sessions"`
}
