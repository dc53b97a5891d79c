package docker

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// adoption says what adopt made of an existing container.
type adoption int

const (
	// adoptedRunning: running (or paused or restarting); the caller
	// watches for its exit.
	adoptedRunning adoption = iota
	// adoptedExited: it had exited; its state is recorded and done closed.
	adoptedExited
	// notStarted: created but never started; nothing was adopted.
	notStarted
	// beingRemoved: the engine is removing it; nothing was adopted.
	beingRemoved
)

func labelOf(c container.InspectResponse, key string) string {
	if c.Config == nil {
		return ""
	}
	return c.Config.Labels[key]
}

// adopt fills k, which is in the table and not yet started, from an
// existing container of this agent and lists it. It returns the event that
// tells what was found, kernel_started for a running container and
// kernel_terminated for an exited one, for the caller to report if that is
// news, and then to watch a running one.
func (r *Runtime) adopt(k *kernel, c container.InspectResponse) (adoption, domain.KernelEvent, error) {
	if got := labelOf(c, LabelAgent); got != r.cfg.AgentID {
		return 0, domain.KernelEvent{}, fmt.Errorf("container %s belongs to agent %q, not %q", c.Name, got, r.cfg.AgentID)
	}
	if got := labelOf(c, LabelKernel); got != string(k.ID) {
		return 0, domain.KernelEvent{}, fmt.Errorf("container %s is labelled kernel %q, not %q", c.Name, got, k.ID)
	}
	if c.State == nil {
		return 0, domain.KernelEvent{}, fmt.Errorf("container %s: the engine reported no state", c.Name)
	}
	st := runtime.KernelState{
		ID:        k.ID,
		Session:   domain.SessionID(labelOf(c, LabelSession)),
		Image:     labelOf(c, LabelImage),
		StartedAt: engineTime(c.State.StartedAt),
	}
	kind := adoptedRunning
	switch c.State.Status {
	case container.StateCreated:
		return notStarted, domain.KernelEvent{}, nil
	case container.StateRemoving:
		return beingRemoved, domain.KernelEvent{}, nil
	case container.StateRunning, container.StatePaused, container.StateRestarting:
		st.Running = true
	default: // exited, dead
		kind = adoptedExited
		e := exitOf(c.State, false, false)
		st.ExitCode, st.Reason, st.Message, st.FinishedAt = &e.Code, e.Reason, e.Message, e.At
	}
	if st.Running {
		st.Ports = portsOf(c)
	}
	k.Own.container = c.ID
	ev, _ := r.kernels.Adopt(k, st)
	return kind, ev, nil
}

// watch starts the goroutine that waits for the container to stop and
// records its exit.
func (r *Runtime) watch(k *kernel) {
	r.watchers.Add(1)
	go func() {
		defer r.watchers.Done()
		st, ok := r.awaitExit(k.Own.container)
		if !ok {
			return // closing
		}
		r.mu.Lock()
		polite := k.Own.polite
		r.mu.Unlock()
		// Recorded once the container has stopped: its resources are free.
		r.kernels.Exited(k, func(destroying bool) runtime.Exit {
			return exitOf(st, destroying, polite)
		})
	}()
}

// awaitExit waits until the container is not running and returns its
// final state, asking again while the engine does not answer. A container
// removed behind the runtime's back yields a nil state. ok is false when
// the runtime is closing.
func (r *Runtime) awaitExit(cid string) (st *container.State, ok bool) {
	for {
		w := r.cli.ContainerWait(r.bg, cid, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		var err error
		select {
		case <-w.Result:
		case err = <-w.Error:
		}
		if r.bg.Err() != nil {
			return nil, false
		}
		if err == nil || cerrdefs.IsNotFound(err) {
			insp, ierr := r.cli.ContainerInspect(r.bg, cid, client.ContainerInspectOptions{})
			if r.bg.Err() != nil {
				return nil, false
			}
			if cerrdefs.IsNotFound(ierr) {
				return nil, true
			}
			if ierr == nil && insp.Container.State != nil && !insp.Container.State.Running {
				return insp.Container.State, true
			}
			if ierr == nil {
				continue // started again meanwhile; wait again
			}
			err = ierr
		}
		r.log.Warn("docker runtime: waiting for a kernel's container failed; asking again", "container", cid, "err", err)
		t := time.NewTimer(retryWait)
		select {
		case <-r.bg.Done():
			t.Stop()
			return nil, false
		case <-t.C:
		}
	}
}

// exitOf is how the container whose final state is st ended, at the
// engine's time of its end (zero, for the table to stamp, where the engine
// kept none). st nil means the container vanished.
func exitOf(st *container.State, destroying, polite bool) runtime.Exit {
	code, reason, msg := describeExit(st, destroying, polite)
	e := runtime.Exit{Code: code, Reason: reason, Message: msg}
	if st != nil {
		e.At = engineTime(st.FinishedAt)
	}
	return e
}

// describeExit turns the engine's final state of a container into the
// runtime's exit code, reason and message. st nil means the container was
// removed by someone else before its state could be read. destroying says
// Destroy stopped it; polite, that it was asked to stop before being
// killed.
func describeExit(st *container.State, destroying, polite bool) (int, domain.ExitReason, string) {
	if st == nil {
		const how = "the container was removed outside this runtime; its exit code is unknown"
		if destroying {
			return -1, domain.ReasonDestroyed, "destroyed: " + how
		}
		return -1, domain.ReasonExited, how
	}
	code := st.ExitCode
	sig := signalOf(code)
	how := fmt.Sprintf("exited with code %d", code)
	if sig != 0 {
		name := unix.SignalName(sig)
		if name == "" {
			name = fmt.Sprintf("signal %d", int(sig))
		}
		how = "killed by signal " + name
	}
	var reason domain.ExitReason
	msg := how
	switch {
	case destroying:
		reason = domain.ReasonDestroyed
		msg = "destroyed: " + how
		if polite && sig == syscall.SIGKILL {
			msg += " after the grace period"
		}
	case st.OOMKilled:
		reason = domain.ReasonOOMKilled
		msg = how + ": the memory limit was hit and the OOM killer ended a process of the kernel"
	case sig != 0:
		reason = domain.ReasonSignaled
	default:
		reason = domain.ReasonExited
	}
	if st.Error != "" {
		msg += " (engine: " + st.Error + ")"
	}
	return code, reason, msg
}

// signalOf reads the engine's 128+N convention for a death by signal N.
// Linux numbers signals up to 64.
func signalOf(code int) syscall.Signal {
	if code > 128 && code <= 128+64 {
		return syscall.Signal(code - 128)
	}
	return 0
}

// engineTime parses the engine's RFC 3339 times; the zero time stands for
// "never" and for anything unreadable.
func engineTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// portsOf reads back the service ports a container's kernel reported when
// it was created (LabelPort): nil when it reported none.
func portsOf(c container.InspectResponse) []domain.ServicePort {
	host, port, err := net.SplitHostPort(labelOf(c, LabelPort))
	if err != nil {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return nil
	}
	// The label holds only what varies; the rest is what every kernel
	// given a port reports.
	return runtime.Spec{Port: n, BindHost: host}.ServicePorts()
}
