package domain

import (
	"fmt"
	"time"
)

// EventKind names something that happened to a kernel or an image on an
// agent. The names are the agent wire's (and the event bus's), so they must
// not change: agents and managers of one release speak them to each other.
type EventKind string

// Event kinds, from the runtime through the wire to the kernel state engine.
// Runtimes emit the pull kinds, EventKernelStarted and
// EventKernelTerminated; the others are understood by the engine for agents
// that report finer steps.
const (
	EventImagePullStarted  EventKind = "image_pull_started"
	EventImagePullFinished EventKind = "image_pull_finished"
	EventImagePullFailed   EventKind = "image_pull_failed"
	EventKernelPulling     EventKind = "kernel_pulling"
	EventKernelCreating    EventKind = "kernel_creating"
	EventKernelStarted     EventKind = "kernel_started"
	EventKernelTerminated  EventKind = "kernel_terminated"
	EventKernelCancelled   EventKind = "kernel_cancelled"
)

// EventKinds lists every event kind.
func EventKinds() []EventKind {
	return []EventKind{EventImagePullStarted, EventImagePullFinished, EventImagePullFailed, EventKernelPulling,
		EventKernelCreating, EventKernelStarted, EventKernelTerminated, EventKernelCancelled}
}

// ParseEventKind checks an event kind name, as a manager must for what an
// agent of another release may send.
func ParseEventKind(s string) (EventKind, error) {
	for _, k := range EventKinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown agent event %q", s)
}

// ImageEvent reports whether the event is about an image on an agent (and
// so applies to every kernel of that image there) rather than one kernel.
func (k EventKind) ImageEvent() bool {
	return k == EventImagePullStarted || k == EventImagePullFinished || k == EventImagePullFailed
}

// ExitReason says how a kernel ended. It is a closed set so metrics and the
// manager can branch on it; a message carries the detail.
type ExitReason string

// Ways a kernel ends.
const (
	// ReasonExited: the kernel's main process exited on its own.
	ReasonExited ExitReason = "exited"
	// ReasonSignaled: a signal the runtime did not send ended it.
	ReasonSignaled ExitReason = "killed by signal"
	// ReasonDestroyed: the runtime stopped it when asked to.
	ReasonDestroyed ExitReason = "destroyed"
	// ReasonOOMKilled: the kernel's memory limit was hit and the kernel's
	// OOM killer ended it.
	ReasonOOMKilled ExitReason = "oom-killed"
)

// KernelEvent is one thing that happened on an agent, the same record from
// the runtime that saw it, through the agent's queue and the wire, to the
// kernel state engine that judges it.
//
// The JSON tags are the agent wire's format for one event, unchanged from
// earlier releases (agentrpc's golden test holds them to it). Fields tagged
// "-" do not travel per event: Agent and Epoch are sent once per batch and
// filled in by the manager; Session and Reason stay on the agent, since the
// manager knows each kernel's session and the wire carries only Message.
type KernelEvent struct {
	Kind EventKind `json:"kind"`
	// Agent and Epoch name the agent incarnation that saw the event; the
	// engine ignores an event from an epoch older than the agent's.
	Agent AgentID `json:"-"`
	Epoch int64   `json:"-"`
	// Kernel (and, on the agent, Session) is set for kernel events, Image
	// for image events.
	Kernel  KernelID  `json:"kernel,omitempty"`
	Session SessionID `json:"-"`
	Image   string    `json:"image,omitempty"`
	// ExitCode is set when a kernel ended with one; a terminated kernel
	// without one never produced it (creation failed, the runtime lost it)
	// and ends in ERROR. A kernel ended by a signal reports 128 plus the
	// signal number, as shells do.
	ExitCode    *int   `json:"exit_code,omitempty"`
	ContainerID string `json:"container_id,omitempty"`
	// Reason is how a kernel ended, for the agent's own branching.
	Reason ExitReason `json:"-"`
	// Message says why for people: a failed pull's error, how a kernel
	// ended ("exited with code 3"). The wire calls it "reason".
	Message string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
	// ServicePorts, on kernel_started, are the ports the kernel serves.
	// Omitted when empty, so the wire stays what agents and managers of
	// earlier releases send and expect.
	ServicePorts []ServicePort `json:"service_ports,omitempty"`
}
