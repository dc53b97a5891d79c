package framework

import (
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Snapshot is everything one scheduling round of one resource group reads,
// taken once by the store. Schedule never mutates it.
type Snapshot struct {
	// Now is the round's time, injected so a decision can be replayed.
	Now   time.Time
	Slots *domain.Registry
	Group domain.ResourceGroup
	// Cursor is where round-robin selection left off in the previous round.
	Cursor domain.AgentID
	// Agents are the group's agents in any order; Schedule filters them.
	Agents []domain.Agent
	// Pending are the group's PENDING sessions with their kernels.
	Pending []PendingSession
	// Dependencies holds the current state of every session a pending
	// session depends on. A dependency missing here is treated as gone.
	Dependencies map[domain.SessionID]DependencyState
	Usage        Usage
	Policies     Policies
	// Jobs holds every job with a pending member in the group; a member
	// whose job is missing here is placed as a session of its own.
	Jobs map[domain.JobID]JobInfo
	// Arrays holds every array with a cap (%N) and a pending element in
	// the group; an element whose array is missing here is not capped.
	Arrays map[domain.ArrayID]ArrayInfo
	// DeviceHeld is, per agent, the share of each device (by id) that its
	// live kernels hold; placement assigns only what is left.
	DeviceHeld map[domain.AgentID]map[string]domain.Quantity
	// Holdings are the kernels holding slots on the group's agents with
	// when each is expected to free them, which reservations plan from.
	// The store loads them only for a group in head-of-line mode reserve
	// or with preemption on.
	Holdings []Holding
	// Preemptions are the group's preemptions within its preemption
	// window, which the budget and the no-cycle rule count.
	Preemptions []PreemptionRecord
	// Decayed is the group's usage history, per project and user, decayed
	// to Now with the group's fair-share half-life. The store loads it
	// for a group whose sequencer is fairshare only.
	Decayed []DecayedUsage
}

// DecayedUsage is one project and user's past use of the group: per slot
// (by SlotID), the slot-seconds of each past hour in the slot's stored
// unit, weighted 2^(-age / half-life), age counted from the middle of the
// hour to Now (0 for the hour not yet over).
type DecayedUsage struct {
	Project, User string
	Slots         []float64
}

// Association is a project and user, the unit fair share charges (after
// SLURM's association of an account and a user).
type Association struct {
	Project, User string
}

// ArrayInfo is what the array cap needs of an array: its name for the
// blocker, its cap, and how many of its elements hold resources.
type ArrayInfo struct {
	Name       string
	MaxRunning int
	Running    int
}

// PreemptionRecord is one preemption the store applied.
type PreemptionRecord struct {
	Victim    domain.SessionID
	Preemptor domain.SessionID
	At        time.Time
}

// Holding is one kernel that holds slots on an agent.
type Holding struct {
	Agent   domain.AgentID
	Session domain.SessionID
	Slots   domain.Vec
	// Ends is when the kernel is expected to free its slots: its session's
	// start of running plus its time limit, or now for a session already
	// ending. Zero when it has no limit: for planning it never ends.
	Ends time.Time
	// What victim selection reads of the holding's session: its status,
	// priority and whether it may be preempted; Started, when RUNNING, is
	// when it started running; PreemptedBy the session that preempted it.
	Status      domain.SessionStatus
	Priority    int
	Preemptible bool
	Started     time.Time
	PreemptedBy domain.SessionID
}

// PendingSession is a session waiting to be placed, with its kernels in
// cluster index order.
type PendingSession struct {
	Session domain.Session
	Kernels []domain.Kernel
}

// DependencyState is what a dependent session needs to know of another.
type DependencyState struct {
	Status  domain.SessionStatus
	Outcome domain.Outcome
}

// Use is what one owner holds right now: the slots of its sessions that hold
// resources, and how many such sessions there are.
type Use struct {
	Occupied domain.Vec
	Active   int
}

// Usage is what owners hold before the round starts. Users, Projects and
// Domains count every resource group, because quotas are global; GroupUsers
// counts only this group, because fairness (DRF) is per group.
type Usage struct {
	Users      map[string]Use
	Projects   map[string]Use
	Domains    map[string]Use
	GroupUsers map[string]domain.Vec
}

// Policies are the resource policies that apply; a name missing from a map
// has no limits.
type Policies struct {
	Users    map[string]domain.Policy
	Projects map[string]domain.Policy
	Domains  map[string]domain.Policy
}
