package framework

import (
	"fmt"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Plan is what one scheduling round decided for one resource group. It is
// optimistic: the store applies it with guards and may drop placements whose
// agents changed meanwhile.
type Plan struct {
	Group string
	// Placements are sessions to move PENDING → SCHEDULED, in the order the
	// round placed them.
	Placements []Placement
	// Waiting are sessions that stay PENDING, each with at least one
	// blocker, none impossible.
	Waiting []Decision
	// Impossible are sessions that can never be scheduled (a failed or
	// cancelled dependency, a type the group does not run); they are to be
	// cancelled with the reason in their blockers.
	Impossible []Decision
	// Tried are the round's sessions in the order the sequencer handed
	// them out, bands of higher priority first: the queue as this round
	// saw it, which the queue view shows.
	Tried []domain.SessionID
	// Cursor is the round-robin position to keep for the next round.
	Cursor domain.AgentID
	// Reservations are the waiting sessions that hold slots from their
	// shadow time (head-of-line reserve), in the order they were made.
	// They are recomputed every round and stored nowhere: the store
	// applies only placements.
	Reservations []Reservation
	// Backfilled are the placements made while a reservation was held,
	// each of which was checked not to delay it.
	Backfilled []domain.SessionID
	// Preemptions are the running sessions to evict for waiting sessions
	// of higher priority bands. The preemptors stay waiting: each is
	// placed in a later round, once its victims' slots are released.
	Preemptions []Preemption
}

// Preemption is one victim evicted for one preemptor.
type Preemption struct {
	Victim    domain.SessionID
	Preemptor domain.SessionID
	// Reason is the victim's status reason ("preempted by <id>").
	Reason string
	// Priority is the victim's; WorkLost how long it had run, which is
	// thrown away.
	Priority int
	WorkLost time.Duration
}

// Reservation is a waiting session's claim on slots from the earliest time
// running sessions' expected ends free enough of them.
type Reservation struct {
	Session domain.SessionID
	// Start is the shadow time: when the session can start if every
	// running session ends by its time limit.
	Start time.Time
	// Agents are where it would start, in agent order.
	Agents []ReservedSlots
	// Backfilled is how many sessions the round placed after it.
	Backfilled int
}

// ReservedSlots is what a reservation needs of one agent.
type ReservedSlots struct {
	Agent   domain.AgentID
	Slots   domain.Vec
	Kernels int32
}

// Placement binds every kernel of one session to an agent.
type Placement struct {
	Session domain.SessionID
	Kernels []KernelPlacement
}

// KernelPlacement is one kernel on one agent with the slots it reserves.
type KernelPlacement struct {
	Kernel domain.KernelID
	Agent  domain.AgentID
	Slots  domain.Vec
	// Devices are the agent's devices the kernel gets, for every slot the
	// agent reports devices of; nil where it reports none.
	Devices []domain.DeviceGrant
}

// Decision explains why a session was not placed.
type Decision struct {
	Session  domain.SessionID
	Blockers []Blocker
}

// BlockerKind says what holds a session back.
type BlockerKind string

// Blocker kinds. The first nine are API.md's; concurrency and session_type
// extend it.
const (
	BlockQuota              BlockerKind = "quota"
	BlockCapacity           BlockerKind = "capacity"
	BlockNoAgents           BlockerKind = "no_agents"
	BlockArchitecture       BlockerKind = "architecture"
	BlockDependency         BlockerKind = "dependency"
	BlockStartTime          BlockerKind = "start_time"
	BlockQueuePosition      BlockerKind = "queue_position"
	BlockResourceGroupState BlockerKind = "resource_group_state"
	BlockGang               BlockerKind = "gang"
	BlockConcurrency        BlockerKind = "concurrency"
	BlockSessionType        BlockerKind = "session_type"
	// BlockReservation is on a session that holds a reservation (Scope the
	// agents, Detail the shadow time in RFC 3339, Requested how many
	// sessions the round placed past it) or on one held off the slots of
	// another's reservation (Scope "session:<id>", Detail its start).
	BlockReservation BlockerKind = "reservation"
	// BlockPreempting is on a session whose victims are being evicted
	// (Scope their ids, comma separated): it starts when their slots are
	// released.
	BlockPreempting BlockerKind = "preempting"
	// BlockArray is on an element of an array whose cap (%N) is reached:
	// Scope "array:<name>", Capacity the cap, Available what is left.
	BlockArray BlockerKind = "array"
)

// KernelsSlot is the pseudo slot name blockers use for an agent's kernel cap.
const KernelsSlot = "kernels"

// MembersSlot is the pseudo slot name of a job's gang that lacks members
// (Requested its min-available, Available those submitted): what it
// waits for is its submitter, not resources, and a hint must say so.
const MembersSlot = "members"

// Blocker is one reason a session was not placed, as numbers rather than
// prose. Scope says whose limit or what object it is ("user:alice",
// "project:p", "domain:d", "group:default", "session:<id>", "agents").
type Blocker struct {
	Kind  BlockerKind
	Scope string
	// Slot, when set, is the slot type name (or KernelsSlot) that fails.
	Slot string
	// Requested and Available are in the slot's stored unit. For capacity,
	// Available is the most of the slot free on any eligible agent and
	// Capacity the most any eligible agent has in total.
	Requested domain.Quantity
	Available domain.Quantity
	Capacity  domain.Quantity
	// Held, for capacity while reservations hold slots, is the most of
	// the slot held on one agent for them: free on the agent (as `agent
	// ls` shows it) but not counted in Available.
	Held domain.Quantity
	// Impossible is true when waiting cannot help: the session is to be
	// cancelled. Everything else waits and is tried again.
	Impossible bool
	// Detail carries a short machine-made fact the numbers cannot, such as
	// a dependency's status ("CANCELLED") or a start time (RFC 3339).
	Detail string
}

// ExceedsCapacity reports whether the request is larger than any eligible
// agent's total capacity (it waits for a bigger agent to join), or than a
// quota itself (it waits for the quota to be raised): waiting for others
// to finish will not help.
func (b Blocker) ExceedsCapacity() bool {
	switch b.Kind {
	case BlockCapacity, BlockGang:
		return b.Slot != "" && b.Slot != MembersSlot && b.Requested > b.Capacity
	case BlockQuota:
		return b.Capacity > 0 && b.Requested > b.Capacity
	}
	return false
}

// Message renders the blocker for a person, using reg to write quantities.
func (b Blocker) Message(reg *domain.Registry) string {
	q := func(v domain.Quantity) string {
		if b.Slot == KernelsSlot || b.Slot == MembersSlot || reg == nil {
			return fmt.Sprint(int64(v))
		}
		id, ok := reg.Lookup(b.Slot)
		if !ok {
			return fmt.Sprint(int64(v))
		}
		return reg.Format(id, v)
	}
	switch b.Kind {
	case BlockQuota:
		if b.ExceedsCapacity() {
			return fmt.Sprintf("%s limit on %s: requested %s, more than the whole quota of %s: it can never fit this quota "+
				"unless the limit is raised", b.Scope, b.Slot, q(b.Requested), q(b.Capacity))
		}
		return fmt.Sprintf("%s limit on %s: requested %s, %s left", b.Scope, b.Slot, q(b.Requested), q(b.Available))
	case BlockConcurrency:
		// Requested is the one session that asks to start, not what the
		// scope runs: that is the limit (Capacity) less what is left.
		return fmt.Sprintf("%s runs %d of at most %d concurrent sessions", b.Scope, int64(b.Capacity-b.Available), int64(b.Capacity))
	case BlockArray:
		running := int64(b.Capacity - b.Available)
		return fmt.Sprintf("array %s: %d of %d elements running (%%%d)", strings.TrimPrefix(b.Scope, "array:"),
			running, int64(b.Capacity), int64(b.Capacity))
	case BlockCapacity, BlockGang:
		if b.Kind == BlockGang && b.Detail != "" { // a job's gang: the fact is in Detail
			return b.Scope + ": " + b.Detail
		}
		prefix := "not enough free"
		if b.Kind == BlockGang {
			prefix = "gang cannot be placed whole: not enough free"
		}
		if b.Slot == "" {
			return prefix + " resources on any single agent, though each slot is free somewhere"
		}
		var devices string
		if b.Detail != "" {
			devices = "; " + b.Detail
		}
		if b.ExceedsCapacity() {
			// Admission refuses what no agent could ever hold, so such a
			// session was admitted while the group might grow (it had no
			// agents, or one since gone): it is the agents of now that
			// cannot hold it.
			return fmt.Sprintf("requests %s %s, more than any agent has in total (largest: %s): it can never fit the agents "+
				"the group has now; waiting for a larger agent%s", q(b.Requested), b.Slot, q(b.Capacity), devices)
		}
		var held string
		if b.Held > 0 {
			held = fmt.Sprintf(", not counting %s held for a reservation", q(b.Held))
		}
		return fmt.Sprintf("%s %s: requested %s, at most %s free on any eligible agent%s%s", prefix, b.Slot, q(b.Requested),
			q(b.Available), held, devices)
	case BlockNoAgents:
		return fmt.Sprintf("no schedulable agents (%s)", b.Scope)
	case BlockArchitecture:
		return fmt.Sprintf("no schedulable agent has architecture %s", b.Detail)
	case BlockDependency:
		if b.Impossible {
			return fmt.Sprintf("dependency %s ended %s; this session can never start", b.Scope, b.Detail)
		}
		return fmt.Sprintf("waiting for dependency %s (now %s)", b.Scope, b.Detail)
	case BlockStartTime:
		return fmt.Sprintf("starts at %s", b.Detail)
	case BlockQueuePosition:
		return fmt.Sprintf("queued behind %s, which does not fit yet (head-of-line: block)", b.Scope)
	case BlockResourceGroupState:
		return fmt.Sprintf("%s is %s", b.Scope, b.Detail)
	case BlockSessionType:
		return fmt.Sprintf("%s does not run %s sessions", b.Scope, b.Detail)
	case BlockPreempting:
		return fmt.Sprintf("preempting %s; starts when their slots are released", b.Scope)
	case BlockReservation:
		at := b.Detail
		if t, err := time.Parse(time.RFC3339, b.Detail); err == nil {
			at = t.UTC().Format("15:04 MST, Jan 2")
		}
		if s, ok := strings.CutPrefix(b.Scope, "session:"); ok {
			return fmt.Sprintf("may not take slots reserved for session %s from %s: its time limit runs past then", s, at)
		}
		msg := fmt.Sprintf("reserved on %s from %s", b.Scope, at)
		if b.Requested > 0 {
			msg += fmt.Sprintf("; %d sessions backfilled around it this round", int64(b.Requested))
		}
		return msg
	}
	return string(b.Kind)
}
