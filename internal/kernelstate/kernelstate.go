package kernelstate

import "github.com/sokovan-go/sokovan/internal/domain"

// Change is what an event does to one kernel. A zero To keeps the status.
type Change struct {
	To          domain.KernelStatus
	ExitCode    *int
	ContainerID string
	Reason      string
	// ServicePorts, when not empty, replace the kernel's.
	ServicePorts []domain.ServicePort
}

// Apply works out the change ev makes to k, given the agent's current
// epoch. It reports false when the event changes nothing: it is for
// another agent, kernel or image, comes from a stale epoch, repeats what
// already happened, or would move the kernel along an illegal edge.
func Apply(k domain.Kernel, agentEpoch int64, ev domain.KernelEvent) (Change, bool) {
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
	case domain.EventImagePullStarted, domain.EventKernelPulling:
		c.To = domain.KernelPulling
	case domain.EventImagePullFinished:
		c.To = domain.KernelPrepared
	case domain.EventImagePullFailed:
		// A failed pull moves no status: the coordinator's PrepareSessions
		// asks again and counts the attempt, and the preparing bound ends
		// it. The reason is kept so "why" can say what went wrong.
		if k.Status > domain.KernelPulling || k.Status < domain.KernelScheduled {
			return Change{}, false
		}
		reason := "image pull failed: " + ev.Message
		if k.StatusReason == reason {
			return Change{}, false
		}
		return Change{Reason: reason}, true
	case domain.EventKernelCreating:
		c.To = domain.KernelCreating
	case domain.EventKernelStarted:
		c.To = domain.KernelRunning
		c.ContainerID = ev.ContainerID
		c.ServicePorts = ev.ServicePorts
	case domain.EventKernelTerminated:
		// No exit code means the kernel never produced one: creation
		// failed or the runtime lost it.
		c.To = domain.KernelTerminated
		if ev.ExitCode == nil {
			c.To = domain.KernelError
		} else {
			code := *ev.ExitCode
			c.ExitCode = &code
		}
		c.Reason = ev.Message
	case domain.EventKernelCancelled:
		c.To = domain.KernelCancelled
		c.Reason = ev.Message
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
	if len(c.ServicePorts) > 0 {
		k.ServicePorts = c.ServicePorts
	}
	return k
}
