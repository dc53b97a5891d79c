package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/kernelstate"
	"github.com/sokovan-go/sokovan/internal/store"
)

// HandleEvent applies one agent event through the kernel state engine. A
// duplicate, stale or out-of-order event changes nothing.
func (c *Coordinator) HandleEvent(ctx context.Context, ev domain.KernelEvent) error {
	return c.HandleEvents(ctx, []domain.KernelEvent{ev})
}

// HandleEvents applies a batch of agent events in order, reading each
// agent once for the batch, and the kernels the batch's kernel events
// name in one read, rather than once per event. What an event writes is
// what the next event on that kernel is judged against; a kernel another
// writer moved meanwhile fails the write's guard and is read again.
func (c *Coordinator) HandleEvents(ctx context.Context, evs []domain.KernelEvent) error {
	agents := map[domain.AgentID]domain.Agent{}
	now := c.clock.Now()
	changed := false
	known := map[domain.KernelID]domain.Kernel{}
	var ids []domain.KernelID
	for _, ev := range evs {
		if !ev.Kind.ImageEvent() {
			ids = append(ids, ev.Kernel)
		}
	}
	if len(ids) > 0 {
		kernels, err := c.store.ListKernels(ctx, store.KernelFilter{IDs: ids})
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		for _, k := range kernels {
			known[k.ID] = k
		}
	}
	for _, ev := range evs {
		agent, ok := agents[ev.Agent]
		if !ok {
			var err error
			if agent, err = c.store.GetAgent(ctx, ev.Agent); err != nil {
				return fmt.Errorf("agent %s: %w", ev.Agent, err)
			}
			agents[ev.Agent] = agent
		}
		var kernels []domain.Kernel
		if ev.Kind.ImageEvent() {
			var err error
			kernels, err = c.store.ListKernels(ctx, store.KernelFilter{Agents: []domain.AgentID{ev.Agent},
				Statuses: []domain.KernelStatus{domain.KernelScheduled, domain.KernelPreparing, domain.KernelPulling}})
			if err != nil {
				return fmt.Errorf("event %s: %w", ev.Kind, err)
			}
		} else if k, ok := known[ev.Kernel]; ok {
			kernels = []domain.Kernel{k}
		}
		for _, k := range kernels {
			cur, applied, err := c.applyEvent(ctx, k, agent.Epoch, ev, now)
			if err != nil {
				return err
			}
			known[cur.ID] = cur
			changed = changed || applied
		}
	}
	if changed {
		c.Mark()
	}
	return nil
}

// applyEvent judges the event against the kernel and writes the change
// guarded by the status it judged from. When another writer moved the
// kernel first, it reads the kernel again and judges anew, so an event is
// never lost to a race and never applied twice. It returns the kernel as
// it now stands, as far as it knows.
func (c *Coordinator) applyEvent(ctx context.Context, k domain.Kernel, epoch int64, ev domain.KernelEvent, now time.Time) (domain.Kernel, bool, error) {
	for range 5 {
		ch, ok := kernelstate.Apply(k, epoch, ev)
		if !ok || ch.To == 0 {
			return k, false, nil
		}
		out, err := c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: []domain.KernelStatus{k.Status},
			To: ch.To, ExitCode: ch.ExitCode, ContainerID: ch.ContainerID, Reason: ch.Reason,
			ServicePorts: ch.ServicePorts, Now: now})
		if err == nil {
			return out, true, nil
		}
		if !errors.Is(err, store.ErrGuardFailed) {
			return k, false, fmt.Errorf("event %s on %s: %w", ev.Kind, k.ID, err)
		}
		fresh, err := c.store.ListKernels(ctx, store.KernelFilter{IDs: []domain.KernelID{k.ID}})
		if err != nil {
			return k, false, fmt.Errorf("event %s on %s: %w", ev.Kind, k.ID, err)
		}
		if len(fresh) == 0 {
			return k, false, nil
		}
		k = fresh[0]
	}
	return k, false, fmt.Errorf("event %s on %s: kernel kept changing under it", ev.Kind, k.ID)
}
