package domain

import "fmt"

// SessionStatus is where a session is in its lifecycle (seed 001).
type SessionStatus uint8

// Session statuses in lifecycle order; the zero value is invalid so that an
// unset status is never mistaken for PENDING.
const (
	SessionPending SessionStatus = iota + 1
	SessionScheduled
	SessionPreparing
	SessionPrepared
	SessionCreating
	SessionRunning
	SessionTerminating
	SessionTerminated
	SessionCancelled
	SessionError
)

var sessionStatusNames = [...]string{
	SessionPending:     "PENDING",
	SessionScheduled:   "SCHEDULED",
	SessionPreparing:   "PREPARING",
	SessionPrepared:    "PREPARED",
	SessionCreating:    "CREATING",
	SessionRunning:     "RUNNING",
	SessionTerminating: "TERMINATING",
	SessionTerminated:  "TERMINATED",
	SessionCancelled:   "CANCELLED",
	SessionError:       "ERROR",
}

// SessionStatuses lists every session status in lifecycle order.
func SessionStatuses() []SessionStatus {
	out := make([]SessionStatus, 0, len(sessionStatusNames)-1)
	for s := SessionPending; s <= SessionError; s++ {
		out = append(out, s)
	}
	return out
}

func (s SessionStatus) String() string {
	if int(s) < len(sessionStatusNames) && s != 0 {
		return sessionStatusNames[s]
	}
	return fmt.Sprintf("SessionStatus(%d)", uint8(s))
}

// ParseSessionStatus reads a status name as String writes it.
func ParseSessionStatus(name string) (SessionStatus, error) {
	for i, n := range sessionStatusNames {
		if n == name && i != 0 {
			return SessionStatus(i), nil
		}
	}
	return 0, fmt.Errorf("unknown session status %q", name)
}

// Terminal reports whether nothing more will happen to the session.
func (s SessionStatus) Terminal() bool {
	return s == SessionTerminated || s == SessionCancelled || s == SessionError
}

// HoldsResources reports whether a session in this status has its slots
// reserved on agents (SCHEDULED through TERMINATING, DESIGN.md invariant 1).
func (s SessionStatus) HoldsResources() bool {
	return s >= SessionScheduled && s <= SessionTerminating
}

// KernelStatus is where a kernel is: the session statuses plus PULLING.
type KernelStatus uint8

// Kernel statuses in lifecycle order.
const (
	KernelPending KernelStatus = iota + 1
	KernelScheduled
	KernelPreparing
	KernelPulling
	KernelPrepared
	KernelCreating
	KernelRunning
	KernelTerminating
	KernelTerminated
	KernelCancelled
	KernelError
)

var kernelStatusNames = [...]string{
	KernelPending:     "PENDING",
	KernelScheduled:   "SCHEDULED",
	KernelPreparing:   "PREPARING",
	KernelPulling:     "PULLING",
	KernelPrepared:    "PREPARED",
	KernelCreating:    "CREATING",
	KernelRunning:     "RUNNING",
	KernelTerminating: "TERMINATING",
	KernelTerminated:  "TERMINATED",
	KernelCancelled:   "CANCELLED",
	KernelError:       "ERROR",
}

// KernelStatuses lists every kernel status in lifecycle order.
func KernelStatuses() []KernelStatus {
	out := make([]KernelStatus, 0, len(kernelStatusNames)-1)
	for s := KernelPending; s <= KernelError; s++ {
		out = append(out, s)
	}
	return out
}

func (s KernelStatus) String() string {
	if int(s) < len(kernelStatusNames) && s != 0 {
		return kernelStatusNames[s]
	}
	return fmt.Sprintf("KernelStatus(%d)", uint8(s))
}

// ParseKernelStatus reads a status name as String writes it.
func ParseKernelStatus(name string) (KernelStatus, error) {
	for i, n := range kernelStatusNames {
		if n == name && i != 0 {
			return KernelStatus(i), nil
		}
	}
	return 0, fmt.Errorf("unknown kernel status %q", name)
}

// Terminal reports whether the kernel has ended for good.
func (s KernelStatus) Terminal() bool {
	return s == KernelTerminated || s == KernelCancelled || s == KernelError
}

// HoldsResources reports whether a kernel in this status still has its
// slots counted in its agent's occupied slots.
func (s KernelStatus) HoldsResources() bool {
	return s >= KernelScheduled && s <= KernelTerminating
}

// AgentStatus is an agent's liveness as the manager sees it.
type AgentStatus uint8

// Agent statuses.
const (
	AgentAlive AgentStatus = iota + 1
	AgentLost
	AgentTerminated
)

var agentStatusNames = [...]string{AgentAlive: "ALIVE", AgentLost: "LOST", AgentTerminated: "TERMINATED"}

func (s AgentStatus) String() string {
	if int(s) < len(agentStatusNames) && s != 0 {
		return agentStatusNames[s]
	}
	return fmt.Sprintf("AgentStatus(%d)", uint8(s))
}

// ParseAgentStatus reads a status name as String writes it.
func ParseAgentStatus(name string) (AgentStatus, error) {
	for i, n := range agentStatusNames {
		if n == name && i != 0 {
			return AgentStatus(i), nil
		}
	}
	return 0, fmt.Errorf("unknown agent status %q", name)
}

// GroupState is a resource group's object state (YuniKorn's partition
// states, seed 003).
type GroupState uint8

// Resource group states. STOPPED schedules nothing; DRAINING makes no new
// placements but lets what is placed run to its end; REMOVED is a drained
// group deleted: its row stays, because ended sessions name it, but it is
// hidden and refuses everything.
const (
	GroupActive GroupState = iota + 1
	GroupStopped
	GroupDraining
	GroupRemoved
)

var groupStateNames = [...]string{GroupActive: "ACTIVE", GroupStopped: "STOPPED", GroupDraining: "DRAINING",
	GroupRemoved: "REMOVED"}

func (s GroupState) String() string {
	if int(s) < len(groupStateNames) && s != 0 {
		return groupStateNames[s]
	}
	return fmt.Sprintf("GroupState(%d)", uint8(s))
}

// ParseGroupState reads a state name as String writes it.
func ParseGroupState(name string) (GroupState, error) {
	for i, n := range groupStateNames {
		if n == name && i != 0 {
			return GroupState(i), nil
		}
	}
	return 0, fmt.Errorf("unknown resource group state %q (want ACTIVE, STOPPED, DRAINING or REMOVED)", name)
}

// SessionType is what a session is for.
type SessionType string

// Session types.
const (
	TypeInteractive SessionType = "interactive"
	TypeBatch       SessionType = "batch"
	TypeInference   SessionType = "inference"
)

// SessionTypes lists every session type.
func SessionTypes() []SessionType {
	return []SessionType{TypeInteractive, TypeBatch, TypeInference}
}

// ParseSessionType checks a session type name.
func ParseSessionType(s string) (SessionType, error) {
	for _, t := range SessionTypes() {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown session type %q (want interactive, batch or inference)", s)
}

// ClusterMode says whether a session's kernels share one agent.
type ClusterMode string

// Cluster modes.
const (
	SingleNode ClusterMode = "single-node"
	MultiNode  ClusterMode = "multi-node"
)

// ParseClusterMode checks a cluster mode name.
func ParseClusterMode(s string) (ClusterMode, error) {
	switch ClusterMode(s) {
	case SingleNode, MultiNode:
		return ClusterMode(s), nil
	}
	return "", fmt.Errorf("unknown cluster mode %q (want single-node or multi-node)", s)
}

// Outcome is how a session ended, which is what dependencies look at.
type Outcome uint8

// Session outcomes. A dependency is satisfied only by OutcomeSuccess.
const (
	OutcomeNone      Outcome = iota // not ended yet
	OutcomeSuccess                  // every kernel exited 0
	OutcomeFailure                  // a kernel exited non-zero, errored or was force-terminated
	OutcomeCancelled                // never ran
	OutcomePreempted                // evicted by a higher priority session
)

var outcomeNames = [...]string{"", "success", "failure", "cancelled", "preempted"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// ParseOutcome reads an outcome name as String writes it ("" is none).
func ParseOutcome(s string) (Outcome, error) {
	for i, n := range outcomeNames {
		if n == s {
			return Outcome(i), nil
		}
	}
	return 0, fmt.Errorf("unknown session outcome %q", s)
}

// Result is a handler outcome recorded in history (seed 001).
type Result string

// Handler results.
const (
	ResultSuccess   Result = "SUCCESS"
	ResultNeedRetry Result = "NEED_RETRY"
	ResultExpired   Result = "EXPIRED"
	ResultGiveUp    Result = "GIVE_UP"
	ResultSkipped   Result = "SKIPPED"
)

// HoldingKernelStatuses lists the kernel statuses that hold slots (and
// device grants), for store filters that read only kernels which can
// still be released.
func HoldingKernelStatuses() []KernelStatus {
	var out []KernelStatus
	for _, s := range KernelStatuses() {
		if s.HoldsResources() {
			out = append(out, s)
		}
	}
	return out
}
