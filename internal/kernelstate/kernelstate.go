package kernelstate

import (
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Kind names an agent event.
type Kind string

// Agent event kinds.
const (
	ImagePullStarted  Kind = "image_pull_started"
	ImagePullFinished Kind = "image_pull_finished"
	ImagePullFailed   Kind = "image_pull_failed"
	KernelPulling     Kind = "kernel_pulling"
	KernelCreating    Kind = "kernel_creating"
	KernelStarted     Kind = "kernel_started"
	KernelTerminated  Kind = "kernel_terminated"
	KernelCancelled   Kind = "kernel_cancelled"
)

// Kinds lists every event kind.
func Kinds() []Kind {
	return []Kind{ImagePullStarted, ImagePullFinished, ImagePullFailed, KernelPulling,
		KernelCreating, KernelStarted, KernelTerminated, KernelCancelled}
}

// ParseKind checks an event kind name.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown agent event %q", s)
}

// ImageEvent reports whether the event is about an image on an agent (and
// so applies to every kernel of that image there) rather than one kernel.
func (k Kind) ImageEvent() bool {
	return k == ImagePullStarted || k == ImagePullFinished || k == ImagePullFailed
}

// Event is what an agent reports.
type Event struct {
	Kind  Kind
	Agent domain.AgentID
	// Epoch is the agent's registration epoch when it sent the event; an
	// event from an earlier incarnation is ignored.
	Epoch int64
	// Kernel is set for kernel events, Image for image events.
	Kernel      domain.KernelID
	Image       string
	ExitCode    *int
	ContainerID string
	Reason      string
	At          time.Time
}

// Change is what an event does to one kernel. A zero To keeps the status.
type Change struct {
	To          domain.KernelStatus
	ExitCode    *int
	ContainerID string
	Reason      string
}

// Apply works out the change ev makes to k, given the agent's current
// epoch. It reports false when the event changes nothing: it is for
// another agent, kernel or image, comes from a stale epoch, repeats what
// already happened, or would move the kernel along an illegal edge.
func Apply(k domain.Kernel, agentEpoch int64, ev Event) (Change, bool) {
	if ev.Agent != k.Agent || ev.Epoch < agentEpoch {
		return Change{}, false
	}
	if ev.Kind.ImageEvent() {
		if ev.Image != k.Image {
			return Change{}, false
		}
	} else if ev.Kernel != k.ID {
		return Change{}, false
	}
	var c Change
	switch ev.Kind {
	case ImagePullStarted, KernelPulling:
		c.To = domain.KernelPulling
	case ImagePullFinished:
		c.To = domain.KernelPrepared
	case ImagePullFailed:
		// A failed pull moves no status: the coordinator's PrepareSessions
		// asks again and counts the attempt, and the preparing bound ends
		// it. The reason is kept so "why" can say what went wrong.
		if k.Status > domain.KernelPulling || k.Status < domain.KernelScheduled {
			return Change{}, false
		}
		reason := "image pull failed: " + ev.Reason
		if k.StatusReason == reason {
			return Change{}, false
		}
		return Change{Reason: reason}, true
	case KernelCreating:
		c.To = domain.KernelCreating
	case KernelStarted:
		c.To = domain.KernelRunning
		c.ContainerID = ev.ContainerID
	case KernelTerminated:
		// No exit code means the kernel never produced one: creation
		// failed or the runtime lost it.
		c.To = domain.KernelTerminated
		if ev.ExitCode == nil {
			c.To = domain.KernelError
		} else {
			code := *ev.ExitCode
			c.ExitCode = &code
		}
		c.Reason = ev.Reason
	case KernelCancelled:
		c.To = domain.KernelCancelled
		c.Reason = ev.Reason
	default:
		return Change{}, false
	}
	if !domain.KernelTargetApplies(k.Status, c.To) {
		return Change{}, false
	}
	return c, true
}

// On returns k as it is after the change.
func (c Change) On(k domain.Kernel) domain.Kernel {
	if c.To != 0 {
		k.Status = c.To
	}
	if c.ExitCode != nil {
		code := *c.ExitCode
		k.ExitCode = &code
	}
	if c.ContainerID != "" {
		k.ContainerID = c.ContainerID
	}
	if c.Reason != "" {
		k.StatusReason = c.Reason
	}
	return k
}
