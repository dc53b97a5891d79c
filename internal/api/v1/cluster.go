package v1

import "time"

// Agent is an agent as GET /v1/agents and the cordon verbs show it.
// Slots are slot name to quantity.
type Agent struct {
	ID            string `json:"id"`
	ResourceGroup string `json:"resource_group"`
	// Status is ALIVE, LOST or TERMINATED; Schedulable is false once
	// cordoned or drained.
	Status       string `json:"status"`
	Schedulable  bool   `json:"schedulable"`
	Architecture string `json:"architecture"`
	// AvailableSlots is the agent's total capacity (Backend.AI's meaning),
	// OccupiedSlots what its kernels reserve, FreeSlots the difference.
	AvailableSlots map[string]string `json:"available_slots"`
	OccupiedSlots  map[string]string `json:"occupied_slots"`
	FreeSlots      map[string]string `json:"free_slots"`
	KernelCount    int               `json:"kernel_count"`
	// MaxKernels caps KernelCount; 0 is no cap.
	MaxKernels int `json:"max_kernels"`
	// LastHeartbeat is null until the agent's first heartbeat.
	LastHeartbeat *time.Time `json:"last_heartbeat"`
	// Address is the agent's RPC address, shown to admins only: anyone
	// who can reach it can try the agent's own API. Empty for others.
	Address string `json:"address"`
	// Runtime is what runs its kernels: process, docker or sim.
	Runtime string            `json:"runtime"`
	Labels  map[string]string `json:"labels"`
	// AllowsCommand: the agent runs a session's own command (create's
	// command) rather than only its image's.
	AllowsCommand bool `json:"allows_command"`
	// Drain is the agent's drain in progress; null when it is not draining.
	Drain *AgentDrain `json:"drain,omitempty"`
	// Devices are the accelerators it hands out one by one, with their
	// holders; absent on agents that report counts only.
	Devices []Device `json:"devices,omitempty"`
}

// AgentDrain reports a drain (`sokovan agent drain --deadline`): nothing new
// is placed on the agent; at the deadline what still runs is terminated.
type AgentDrain struct {
	StartedAt time.Time `json:"started_at"`
	// Deadline is null for a drain that waits for sessions however long.
	Deadline *time.Time `json:"deadline"`
	// RemainingKernels is how many kernels still hold resources there;
	// Drained is true once none does.
	RemainingKernels int  `json:"remaining_kernels"`
	Drained          bool `json:"drained"`
}

// Group is a resource group with its settings in force.
type Group struct {
	Name string `json:"name"`
	// State is ACTIVE, STOPPED or DRAINING; REMOVED only in the answer to
	// the DELETE that removed the group.
	State string `json:"state"`
	// Sequencer orders the queue (fifo, lifo, drf, fairshare); Selector picks agents
	// (concentrated, dispersed, round-robin).
	Sequencer string `json:"sequencer"`
	Selector  string `json:"selector"`
	// HeadOfLine is reserve (the first sessions that do not fit reserve
	// slots from the earliest time they free; later ones pass only where
	// they cannot delay that), skip (later sessions may pass one that does
	// not fit) or block.
	HeadOfLine string `json:"head_of_line"`
	// ReservationDepth is how many waiting sessions hold reservations at
	// once under reserve.
	ReservationDepth int `json:"reservation_depth"`
	// MaxRetries is how many failed attempts a phase gets before it gives
	// up.
	MaxRetries int `json:"max_retries"`
	// AllowedTypes are the session types it runs; empty is all.
	AllowedTypes []string `json:"allowed_types"`
	Timeouts     Timeouts `json:"timeouts"`
	// DefaultSlots and MinSlots are in force: the group's own values laid
	// over the built-in defaults and floors.
	DefaultSlots map[string]string `json:"default_slots"`
	MinSlots     map[string]string `json:"min_slots"`
	// DefaultTimeLimit is a session's time limit when it asks for none;
	// MaxTimeLimit the most one may ask for; IdleTimeout ends interactive
	// sessions unused that long. Durations; "0s" is none (no cap, off).
	DefaultTimeLimit string `json:"default_time_limit"`
	MaxTimeLimit     string `json:"max_time_limit"`
	IdleTimeout      string `json:"idle_timeout"`
	// Preemption lets a waiting session of a higher priority band evict
	// preemptible sessions of lower bands; off by default.
	Preemption Preemption `json:"preemption"`
	// FairShare is the fairshare sequencer's half-life and shares.
	FairShare FairShare `json:"fair_share"`
}

// FairShare is how the fairshare sequencer weighs a group's usage
// history: past use counts half as much every HalfLife (a duration), and
// Shares give users ("user:NAME") and projects ("project:NAME") more or
// less than the 1 a name missing has.
type FairShare struct {
	HalfLife string             `json:"half_life"`
	Shares   map[string]float64 `json:"shares"`
}

// FairShareRequest changes a group's fair-share settings. HalfLife is a
// duration ("0s": the default, 168h); Shares are merged into the group's,
// and a share of 0 removes one (back to 1).
type FairShareRequest struct {
	HalfLife *string            `json:"half_life,omitempty"`
	Shares   map[string]float64 `json:"shares,omitempty"`
}

// Preemption is a group's priority preemption policy. A victim must have
// run MinRuntime; at most Budget sessions are preempted in any Window
// (0: no cap), and a session may not preempt one that preempted it within
// the Window. Durations; "0s" is none.
type Preemption struct {
	Enabled    bool   `json:"enabled"`
	MinRuntime string `json:"min_runtime"`
	Budget     int    `json:"budget"`
	Window     string `json:"window"`
}

// PreemptionRequest changes some of a group's preemption policy; a nil
// field keeps its value.
type PreemptionRequest struct {
	Enabled    *bool   `json:"enabled,omitempty"`
	MinRuntime *string `json:"min_runtime,omitempty"`
	Budget     *int    `json:"budget,omitempty"`
	Window     *string `json:"window,omitempty"`
}

// Timeouts bound how long a session may stay in each status before it
// expires, as durations; "0s" is no bound.
type Timeouts struct {
	Pending     string `json:"pending"`
	Scheduled   string `json:"scheduled"`
	Preparing   string `json:"preparing"`
	Prepared    string `json:"prepared"`
	Creating    string `json:"creating"`
	Terminating string `json:"terminating"`
}

// GroupRequest is the body of PUT /v1/resource-groups/{name}. A nil
// field keeps the current value (or the default, for a new group).
type GroupRequest struct {
	State      *string `json:"state,omitempty"`
	Sequencer  *string `json:"sequencer,omitempty"`
	Selector   *string `json:"selector,omitempty"`
	HeadOfLine *string `json:"head_of_line,omitempty"`
	// ReservationDepth is 0 to 100.
	ReservationDepth *int             `json:"reservation_depth,omitempty"`
	MaxRetries       *int             `json:"max_retries,omitempty"`
	AllowedTypes     *[]string        `json:"allowed_types,omitempty"`
	Timeouts         *TimeoutsRequest `json:"timeouts,omitempty"`
	// DefaultSlots and MinSlots replace the group's own values whole; {}
	// goes back to the built-in ones.
	DefaultSlots *map[string]string `json:"default_slots,omitempty"`
	MinSlots     *map[string]string `json:"min_slots,omitempty"`
	// Durations, "0s" for none: see Group.
	DefaultTimeLimit *string `json:"default_time_limit,omitempty"`
	MaxTimeLimit     *string `json:"max_time_limit,omitempty"`
	IdleTimeout      *string `json:"idle_timeout,omitempty"`
	// Preemption changes the group's preemption policy: see Preemption.
	Preemption *PreemptionRequest `json:"preemption,omitempty"`
	// FairShare changes the fairshare sequencer's settings.
	FairShare *FairShareRequest `json:"fair_share,omitempty"`
}

// TimeoutsRequest changes some of a group's timeouts; a nil one keeps its
// value.
type TimeoutsRequest struct {
	Pending     *string `json:"pending,omitempty"`
	Scheduled   *string `json:"scheduled,omitempty"`
	Preparing   *string `json:"preparing,omitempty"`
	Prepared    *string `json:"prepared,omitempty"`
	Creating    *string `json:"creating,omitempty"`
	Terminating *string `json:"terminating,omitempty"`
}
