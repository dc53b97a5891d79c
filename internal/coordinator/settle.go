package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// KernelReport is one kernel an agent says it has.
type KernelReport struct {
	ID       domain.KernelID
	Running  bool
	ExitCode *int
	Reason   string
	// ServicePorts are what a running kernel serves, so a lost
	// kernel_started is made good with them.
	ServicePorts []domain.ServicePort
	// Waiting: created but not started (a job queued in SLURM). Nothing is
	// implied about its state; it is only checked against its session, so
	// a kernel whose session ended while it queued is not left behind.
	Waiting bool
}

// Settle takes an agent's report of its kernels (registration or
// heartbeat). What the report implies is applied — a kernel that runs has
// started, one that exited has terminated — so a lost event is made good by
// the next report. It returns the kernels the agent is to destroy: unknown,
// ended (once the manager has recorded the end), not yet placed, or placed
// on another agent. A report from an earlier epoch than the agent's current
// one is stale and answered with nothing, so an old incarnation can neither
// move kernels nor have live ones destroyed.
//
// It reads the agent and the reported kernels once and writes only where a
// report changes something, because it runs for every heartbeat.
func (c *Coordinator) Settle(ctx context.Context, agentID domain.AgentID, epoch int64, reports []KernelReport) ([]domain.KernelID, error) {
	agent, err := c.store.GetAgent(ctx, agentID)
	if err != nil {
		return nil, err
	}
	if epoch < agent.Epoch || len(reports) == 0 {
		return nil, nil
	}
	ids := make([]domain.KernelID, len(reports))
	for i, r := range reports {
		ids[i] = r.ID
	}
	known, err := c.store.ListKernels(ctx, store.KernelFilter{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("settle %s: %w", agentID, err)
	}
	byID := make(map[domain.KernelID]domain.Kernel, len(known))
	for _, k := range known {
		byID[k.ID] = k
	}
	now := c.clock.Now()
	changed := false
	var destroy []domain.KernelID
	for _, r := range reports {
		k, ok := byID[r.ID]
		if !ok || k.Agent != agentID || k.Status == domain.KernelPending {
			destroy = append(destroy, r.ID)
			continue
		}
		if r.Waiting {
			if k.Status.Terminal() {
				destroy = append(destroy, r.ID)
			}
			continue
		}
		ev := domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: agentID, Epoch: epoch, Kernel: r.ID, At: now,
			ServicePorts: r.ServicePorts}
		if !r.Running {
			ev.Kind, ev.ExitCode, ev.Message = domain.EventKernelTerminated, r.ExitCode, r.Reason
		}
		_, applied, err := c.applyEvent(ctx, k, agent.Epoch, ev, now)
		if err != nil {
			return nil, err
		}
		changed = changed || applied
		// An exited kernel is the agent's to clean up once its end is
		// recorded (just now, or earlier); a running one only when the
		// manager already ended it.
		if !r.Running || k.Status.Terminal() {
			destroy = append(destroy, r.ID)
		}
	}
	if changed {
		c.Mark()
	}
	slices.Sort(destroy)
	return destroy, nil
}

// AgentRestarted settles what an agent's earlier incarnation ran: a kernel
// the manager placed there that had been created (CREATING, RUNNING,
// TERMINATING) and that the agent, registering under a new epoch, does not
// report has died with it. It ends in ERROR with that reason, which the
// promotion handlers carry to its session; its slots are released once.
// Kernels not yet created there (SCHEDULED through PREPARED) are fine: the
// handlers ask the new incarnation again.
//
// The agent is the truth about its hardware: a kernel holding a device the
// new incarnation no longer reports (a GPU that fell off the bus, a
// shorter --devices list) is lost with that device, as with a lost agent
// (abandon): not started, its session goes back to PENDING; started, it
// ends in ERROR and the agent is told to destroy it when Settle reads its
// report. No grant is left naming a device the agent does not have.
func (c *Coordinator) AgentRestarted(ctx context.Context, agentID domain.AgentID, epoch int64, present []domain.KernelID) error {
	agent, err := c.store.GetAgent(ctx, agentID)
	if err != nil {
		return err
	}
	if epoch < agent.Epoch {
		return nil
	}
	kernels, err := c.store.ListKernels(ctx, store.KernelFilter{Agents: []domain.AgentID{agentID},
		Statuses: []domain.KernelStatus{domain.KernelCreating, domain.KernelRunning, domain.KernelTerminating}})
	if err != nil {
		return fmt.Errorf("agent %s restarted: %w", agentID, err)
	}
	now := c.clock.Now()
	lost := false
	for _, k := range kernels {
		if slices.Contains(present, k.ID) {
			continue
		}
		_, err := c.store.UpdateKernel(ctx, store.KernelUpdate{Kernel: k.ID, From: []domain.KernelStatus{k.Status},
			To: domain.KernelError, Reason: fmt.Sprintf("not running on agent %s after it restarted", agentID), Now: now})
		if err != nil && !errors.Is(err, store.ErrGuardFailed) {
			return fmt.Errorf("agent %s restarted: kernel %s: %w", agentID, k.ID, err)
		}
		lost = true
	}
	if lost {
		c.Mark()
	}
	return c.devicesGone(ctx, agent, now)
}

// devicesGone abandons the kernels on agent that hold a device it no
// longer has.
func (c *Coordinator) devicesGone(ctx context.Context, agent domain.Agent, now time.Time) error {
	have := make(map[string]bool, len(agent.Devices))
	for _, d := range agent.Devices {
		have[d.ID] = true
	}
	// Only kernels that hold something can hold a device; the agent's
	// ended kernels, which grow with its history, are not read.
	kernels, err := c.store.ListKernels(ctx, store.KernelFilter{Agents: []domain.AgentID{agent.ID}, Statuses: domain.HoldingKernelStatuses()})
	if err != nil {
		return fmt.Errorf("agent %s restarted: %w", agent.ID, err)
	}
	var gone []domain.Kernel
	var missing []string
	for _, k := range kernels {
		if !k.Status.HoldsResources() {
			continue
		}
		lost := false
		for _, g := range k.Devices {
			if !have[g.Device] {
				lost = true
				if !slices.Contains(missing, g.Device) {
					missing = append(missing, g.Device)
				}
			}
		}
		if lost {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.Sort(missing)
	noun := "device"
	if len(missing) > 1 {
		noun = "devices"
	}
	reason := fmt.Sprintf("%s %s no longer on agent %s", noun, strings.Join(missing, ", "), agent.ID)
	c.log.Warn("agent restarted without devices its kernels hold", "agent", agent.ID, "devices", missing, "kernels", len(gone))
	ids := make(map[domain.KernelID]bool, len(gone))
	for _, k := range gone {
		ids[k.ID] = true
	}
	return c.abandon(ctx, abandonment{agent: agent.ID, reason: reason, lost: func(k domain.Kernel) bool { return ids[k.ID] }},
		gone, now)
}
