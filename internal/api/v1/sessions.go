package v1

import "time"

// CreateSessionRequest is the body of POST /v1/sessions. Only image is
// required; every other field left out takes the default named here.
type CreateSessionRequest struct {
	// Name is free text for people; sessions are known by ID.
	Name string `json:"name,omitempty"`
	// Type decides which resource groups may run it (default interactive).
	Type  string `json:"type,omitempty" enum:"interactive,batch,inference"`
	Image string `json:"image,omitempty"`
	// Architecture is the kernels' CPU architecture (an addition to
	// API.md; default the manager's, x86_64 unless configured).
	Architecture string `json:"architecture,omitempty"`
	// Resources are per kernel, slot name to quantity; slots left out get
	// the resource group's default.
	Resources map[string]string `json:"resources,omitempty"`
	// ClusterMode says whether the kernels share one agent (single-node,
	// the default) or may spread (multi-node).
	ClusterMode string `json:"cluster_mode,omitempty" enum:"single-node,multi-node"`
	// ClusterSize is the number of kernels (default 1).
	ClusterSize *int `json:"cluster_size,omitempty"`
	// Priority orders the queue, higher first (default 10).
	Priority *int `json:"priority,omitempty"`
	// ResourceGroup defaults to the manager's default group.
	ResourceGroup string `json:"resource_group,omitempty"`
	// DependsOn names sessions that must end successfully first.
	DependsOn []string `json:"depends_on,omitempty"`
	// StartsAt is the earliest start, RFC 3339.
	StartsAt string `json:"starts_at,omitempty"`
	// TimeLimit bounds how long the session runs, counted from when it
	// becomes RUNNING, as a Go duration ("2h", "90m"); past it the session
	// is terminated with reason "time limit" and outcome failure. Default
	// the resource group's default_time_limit; at most its
	// max_time_limit.
	TimeLimit string `json:"time_limit,omitempty"`
	// Preemptible lets a higher priority session evict this one where its
	// group preempts (default: true for batch, false otherwise); Requeue
	// submits a new attempt of it when it is preempted.
	Preemptible *bool `json:"preemptible,omitempty"`
	Requeue     bool  `json:"requeue,omitempty"`
	// DesignatedAgents restricts placement to these agents, or with
	// DesignatedStrict false only prefers them.
	DesignatedAgents []string `json:"designated_agents,omitempty"`
	// DesignatedStrict (an addition, default true): only the designated
	// agents; false prefers them but may use others.
	DesignatedStrict *bool `json:"designated_strict,omitempty"`
	// Command replaces the image's command; Env is added to its
	// environment.
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Job (an id, or the name of one of the caller's live jobs) makes the
	// session a member: it starts only with at least min_available members
	// of the job placed together.
	Job string `json:"job,omitempty"`
	// Array is SLURM's --array spec: indexes, ranges and steps, and an
	// optional cap on how many run at once, such as "0-99%10" or
	// "1,3,5-9:2%4". POST /v1/arrays and a Session object of an apply
	// file take it (the object is then an array); POST /v1/sessions and
	// a Job's members refuse it.
	Array string `json:"array,omitempty"`
}

// Session is a session with its kernels, as every session endpoint and
// the event stream's snapshot show it.
type Session struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Job is the job the session is a member of, if any.
	Job string `json:"job,omitempty"`
	// Array is the array the session is an element of, if any, and
	// ArrayIndex its index there (its SOKOVAN_ARRAY_INDEX).
	Array      string `json:"array,omitempty"`
	ArrayIndex *int   `json:"array_index,omitempty"`
	// Owner, Project and Domain are the submitting user's, charged for
	// quotas.
	Owner        string `json:"owner"`
	Project      string `json:"project"`
	Domain       string `json:"domain"`
	Type         string `json:"type"`
	Image        string `json:"image"`
	Architecture string `json:"architecture"`
	// Status is the lifecycle status (PENDING … RUNNING, TERMINATED,
	// CANCELLED, ERROR); StatusReason says why it was entered, and
	// StatusChangedAt when.
	Status          string    `json:"status"`
	StatusReason    string    `json:"status_reason"`
	StatusChangedAt time.Time `json:"status_changed_at"`
	CreatedAt       time.Time `json:"created_at"`
	// StartsAt is the earliest start the request asked for; absent when
	// none.
	StartsAt      *time.Time `json:"starts_at,omitempty"`
	ResourceGroup string     `json:"resource_group"`
	Priority      int        `json:"priority"`
	// RequestedSlots are per kernel, the request completed with the
	// group's defaults.
	RequestedSlots map[string]string `json:"requested_slots"`
	ClusterMode    string            `json:"cluster_mode"`
	ClusterSize    int               `json:"cluster_size"`
	DependsOn      []string          `json:"depends_on"`
	// DesignatedAgents and DesignatedStrict restrict or steer placement.
	DesignatedAgents []string `json:"designated_agents"`
	DesignatedStrict bool     `json:"designated_strict"`
	// Outcome is set once the session ended: success, failure, cancelled,
	// preempted.
	// A session ended for its time limit or idleness shows failure from
	// the moment it was sent to TERMINATING.
	Outcome string `json:"outcome,omitempty"`
	// TimeLimit is how long it may run once RUNNING; absent when none.
	TimeLimit string `json:"time_limit,omitempty"`
	// Preemptible and Requeue are as submitted; PreemptedBy names the
	// session that preempted it (its outcome is then preempted);
	// RequeuedFrom, on a new attempt of a preempted session, names the
	// attempt it was requeued from (their ids share nothing).
	Preemptible  bool   `json:"preemptible"`
	Requeue      bool   `json:"requeue,omitempty"`
	PreemptedBy  string `json:"preempted_by,omitempty"`
	RequeuedFrom string `json:"requeued_from,omitempty"`
	// Command and Env are in GET /v1/sessions/{id} only: listings leave
	// them out, as they can be large.
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Kernels []Kernel          `json:"kernels"`
	// ServicePorts are what the session's running kernels serve; empty
	// while none runs. Reach one at ProxyPath with the caller's token, or
	// with `sokovan session port-forward`.
	ServicePorts []ServicePort `json:"service_ports"`
}

// Kernel is one of a session's kernels: one process or container on one
// agent.
type Kernel struct {
	ID string `json:"id"`
	// Agent is where it was placed; empty until it is.
	Agent           string    `json:"agent"`
	Status          string    `json:"status"`
	StatusReason    string    `json:"status_reason"`
	StatusChangedAt time.Time `json:"status_changed_at"`
	// ClusterRole is "main" or "sub"; ClusterIdx numbers the kernels
	// from 0.
	ClusterRole string `json:"cluster_role"`
	ClusterIdx  int    `json:"cluster_idx"`
	// ExitCode is set once the kernel exited; null before, or when it
	// never ran.
	ExitCode *int `json:"exit_code"`
	// ContainerID is the runtime's handle (a process id, a container id);
	// absent until it was created.
	ContainerID string `json:"container_id,omitempty"`
	Image       string `json:"image"`
	// Devices are the devices placement granted it; absent on agents that
	// hand out no devices.
	Devices []DeviceGrant `json:"devices,omitempty"`
}

// ServicePort is one port a session's kernel serves.
type ServicePort struct {
	Name string `json:"name"`
	// Protocol is "http" or "tcp".
	Protocol string `json:"protocol"`
	Kernel   string `json:"kernel"`
	// Host and Port are where the kernel listens on its agent's machine,
	// reachable from there (loopback) or as its agent allows.
	Host string `json:"host"`
	Port int    `json:"port"`
	// ProxyPath is where the manager proxies it for the session's owner:
	// /v1/sessions/{id}/proxy/{name}/.
	ProxyPath string `json:"proxy_path"`
}

// History is one handler outcome in a session's history.
type History struct {
	At time.Time `json:"at"`
	// Handler is the coordinator's handler that acted, such as
	// ScheduleNewSessions.
	Handler string `json:"handler"`
	Result  string `json:"result" enum:"SUCCESS,NEED_RETRY,EXPIRED,GIVE_UP,SKIPPED"`
	// From and To are the statuses before and after; empty when the
	// outcome moved nothing.
	From    string `json:"from"`
	To      string `json:"to"`
	Message string `json:"message"`
	// Attempt counts identical consecutive outcomes, merged into one entry.
	Attempt int `json:"attempt"`
}

// Why is the answer of GET /v1/sessions/{id}/why.
type Why struct {
	Status string `json:"status"`
	// Blockers keep a PENDING session in the queue; empty when it would be
	// placed now, and for every other status.
	Blockers []Blocker `json:"blockers"`
	// Progress explains a session that is placed but not yet running, or
	// terminating; absent for PENDING, RUNNING and ended sessions.
	Progress *Progress `json:"progress,omitempty"`
	// EstimatedStart is, for a PENDING session, when a replay of its group
	// through the scheduler says it starts, assuming sessions run to their
	// time limits (typical run times where they have none) and no new
	// submission ahead of it. An estimate, refreshed every few seconds;
	// absent when it cannot start or not within a week.
	EstimatedStart *time.Time `json:"estimated_start,omitempty"`
	// Ended says how and why an ended session ended; absent for a live
	// one.
	Ended *Ended `json:"ended,omitempty"`
	// FairShare is the session's standing in a fairshare group; absent
	// in other groups and for sessions not PENDING.
	FairShare *FairShareFactor `json:"fair_share,omitempty"`
}

// Ended is how a session ended: when, its outcome (success, failure,
// cancelled) and the reason it entered its final status.
type Ended struct {
	At      time.Time `json:"at"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason"`
}

// Progress says what a placed session waits for: one line per kernel
// that holds it back, when the status's bound will move it on, and the
// last failed attempt in this status.
type Progress struct {
	// Since is when the session entered its status.
	Since time.Time `json:"since"`
	// Bound and Deadline are absent when the status is unbounded.
	Bound       string     `json:"bound,omitempty"`
	Deadline    *time.Time `json:"deadline,omitempty"`
	WaitingFor  []string   `json:"waiting_for"`
	LastFailure string     `json:"last_failure,omitempty"`
}

// Blocker is one reason a session is not placed, for people and tools:
// requested, available and capacity are quantities of the slot (counts of
// sessions for concurrency, of kernels for the "kernels" slot), empty
// when the kind has none.
type Blocker struct {
	Kind string `json:"kind" enum:"quota,capacity,no_agents,architecture,dependency,start_time,queue_position,resource_group_state,gang,concurrency,session_type,reservation"`
	// Scope is whose limit or what object it is: "user:alice",
	// "project:p", "group:default", "session:<id>", "agents".
	Scope     string `json:"scope"`
	Slot      string `json:"slot"`
	Requested string `json:"requested"`
	Available string `json:"available"`
	Capacity  string `json:"capacity,omitempty"`
	// Held is what reservations hold of the slot on one agent, free there
	// but not counted in Available (capacity blockers only).
	Held       string `json:"held,omitempty"`
	Impossible bool   `json:"impossible,omitempty"`
	// ExceedsCapacity: the request is larger than any eligible agent in
	// total (capacity, gang), or than the whole quota (quota), so waiting
	// alone will not help.
	ExceedsCapacity bool   `json:"exceeds_capacity,omitempty"`
	Detail          string `json:"detail,omitempty"`
	// Message is the blocker in one sentence.
	Message string `json:"message"`
}

// Change is the data of one event-stream event: a session's or a
// kernel's status change.
type Change struct {
	// Seq is the change's position in the feed, also the event's id, from
	// which a stream resumes.
	Seq       int64  `json:"seq"`
	Kind      string `json:"kind" enum:"session,kernel"`
	SessionID string `json:"session_id"`
	// KernelID, Agent and ExitCode are a kernel change's.
	KernelID string `json:"kernel_id,omitempty"`
	Owner    string `json:"owner"`
	// From is empty for a session's or kernel's first status.
	From     string    `json:"from"`
	To       string    `json:"to"`
	Reason   string    `json:"reason"`
	Agent    string    `json:"agent,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`
	At       time.Time `json:"at"`
}
