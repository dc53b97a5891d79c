package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Recover adopts the containers the engine holds for this agent (by the
// sokovan.agent label), so that an agent restarted after a crash finds its
// kernels again. Running ones are listed by Live and watched as if this
// runtime had started them; exited ones are listed with their exit code,
// which is reported again with kernel_terminated (the manager applies a
// repeated event idempotently, and the first report may have been lost
// with the old agent). Containers that were created but never started are
// removed: the manager's create will be retried and makes a fresh one.
// Kernels the runtime already knows are left alone, so calling Recover
// again is harmless.
func (r *Runtime) Recover(ctx context.Context) error {
	if r.kernels.Closed() {
		return runtime.ErrClosed
	}
	list, err := r.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelAgent+"="+r.cfg.AgentID),
	})
	if err != nil {
		return fmt.Errorf("recover: list containers: %w", err)
	}
	var errs []error
	for _, c := range list.Items {
		id := domain.KernelID(c.Labels[LabelKernel])
		if runtime.ValidKernelID(id) != nil {
			r.log.Warn("docker runtime: a container labelled for this agent names no valid kernel; left alone", "container", c.ID, "kernel", id)
			continue
		}
		if err := r.recoverOne(ctx, id, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("recover kernel %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func (r *Runtime) recoverOne(ctx context.Context, id domain.KernelID, cid string) error {
	insp, err := r.cli.ContainerInspect(ctx, cid, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil // removed since the listing
	}
	if err != nil {
		return err
	}
	_, err = r.adoptExisting(ctx, id, insp.Container, true)
	return err
}

// adoptExisting takes container c of this agent into the books as kernel
// id and returns the kernel, or the runtime's own entry when it already
// has one. A container in which nothing ever ran (created, never started;
// or being removed) is removed, and the kernel is nil. report says whether
// to report an exited container's exit again.
func (r *Runtime) adoptExisting(ctx context.Context, id domain.KernelID, c container.InspectResponse, report bool) (*kernel, error) {
	k, fresh := r.kernels.Hold(id, domain.SessionID(labelOf(c, LabelSession)))
	if !fresh {
		return k, nil
	}
	kind, ev, err := r.adopt(k, c)
	if err == nil && (kind == notStarted || kind == beingRemoved) {
		if _, rerr := r.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !cerrdefs.IsNotFound(rerr) {
			err = fmt.Errorf("remove a never-started container: %w", rerr)
		}
		if err == nil {
			r.kernels.Fail(k, errNeverStarted)
			return nil, nil
		}
	}
	if err != nil {
		r.kernels.Fail(k, err)
		return nil, err
	}
	// A running container's start was reported by the runtime that
	// started it; only an exit may have been missed.
	if report && kind == adoptedExited {
		r.out.Emit(ev)
	}
	if kind == adoptedRunning {
		r.watch(k)
	}
	return k, nil
}

// errNeverStarted marks a kernel entry that stood for a container in which
// nothing ran; waiters treat it like a failed create.
var errNeverStarted = errors.New("never started")
