package storetest

import (
	"context"
	"errors"
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Reader is what CheckInvariants reads.
type Reader interface {
	ListAgents(ctx context.Context, f store.AgentFilter) ([]domain.Agent, error)
	ListSessions(ctx context.Context, f store.SessionFilter) ([]domain.Session, error)
	ListKernels(ctx context.Context, f store.KernelFilter) ([]domain.Kernel, error)
}

// CheckInvariants checks DESIGN.md's invariants 1 and 2 over everything the
// store holds, and that no agent is booked beyond its capacity or kernel
// cap:
//
//   - every agent's occupied slots equal the sum of the requests of its
//     kernels in SCHEDULED through TERMINATING, and its kernel count their
//     number;
//   - a kernel holds resources only on an agent that exists;
//   - a PENDING session has only PENDING kernels, a session holding
//     resources has no PENDING kernel, and an ended session no kernel that
//     holds resources;
//   - no device is assigned to two live kernels (issue 19): the grants of
//     the kernels holding resources on an agent name only its devices and
//     hold no device beyond one whole, and a PENDING kernel holds none.
//
// It reads without a transaction spanning the calls, so run it when no
// writer is active.
func CheckInvariants(ctx context.Context, r Reader) error {
	agents, err := r.ListAgents(ctx, store.AgentFilter{})
	if err != nil {
		return fmt.Errorf("invariants: list agents: %w", err)
	}
	kernels, err := r.ListKernels(ctx, store.KernelFilter{})
	if err != nil {
		return fmt.Errorf("invariants: list kernels: %w", err)
	}
	sessions, err := r.ListSessions(ctx, store.SessionFilter{})
	if err != nil {
		return fmt.Errorf("invariants: list sessions: %w", err)
	}
	var errs []error
	type held struct {
		slots domain.Vec
		n     int
	}
	sums := map[domain.AgentID]*held{}
	byAgent := map[domain.AgentID]domain.Agent{}
	for _, a := range agents {
		byAgent[a.ID] = a
		sums[a.ID] = &held{slots: make(domain.Vec, len(a.Occupied))}
	}
	status := map[domain.SessionID]domain.SessionStatus{}
	for _, s := range sessions {
		status[s.ID] = s.Status
	}
	for _, k := range kernels {
		if k.Status.HoldsResources() {
			h, ok := sums[k.Agent]
			if !ok {
				errs = append(errs, fmt.Errorf("kernel %s is %s on agent %q, which does not exist", k.ID, k.Status, k.Agent))
				continue
			}
			h.slots.Add(k.Requested)
			h.n++
		}
		ss, ok := status[k.SessionID]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("kernel %s belongs to missing session %s", k.ID, k.SessionID))
		case ss == domain.SessionPending && k.Status != domain.KernelPending:
			errs = append(errs, fmt.Errorf("session %s is PENDING but kernel %s is %s", k.SessionID, k.ID, k.Status))
		case ss.HoldsResources() && k.Status == domain.KernelPending:
			errs = append(errs, fmt.Errorf("session %s is %s but kernel %s is PENDING", k.SessionID, ss, k.ID))
		case ss.Terminal() && k.Status.HoldsResources():
			errs = append(errs, fmt.Errorf("session %s is %s but kernel %s still holds resources (%s)", k.SessionID, ss, k.ID, k.Status))
		}
		if k.Status == domain.KernelPending && k.Agent != "" {
			errs = append(errs, fmt.Errorf("kernel %s is PENDING on agent %s", k.ID, k.Agent))
		}
	}
	errs = append(errs, checkDevices(agents, kernels)...)
	for _, a := range agents {
		h := sums[a.ID]
		if !equalVec(a.Occupied, h.slots) {
			errs = append(errs, fmt.Errorf("agent %s: occupied %v, its kernels hold %v", a.ID, a.Occupied, h.slots))
		}
		if a.KernelCount != h.n {
			errs = append(errs, fmt.Errorf("agent %s: kernel count %d, %d kernels hold resources", a.ID, a.KernelCount, h.n))
		}
		if short, fits := domain.Fits(a.Occupied, a.Capacity); !fits {
			errs = append(errs, fmt.Errorf("agent %s over-committed: slot %d holds %d of %d", a.ID, short.Slot, short.Requested, short.Available))
		}
		if a.MaxKernels > 0 && a.KernelCount > a.MaxKernels {
			errs = append(errs, fmt.Errorf("agent %s holds %d kernels, at most %d allowed", a.ID, a.KernelCount, a.MaxKernels))
		}
	}
	return errors.Join(errs...)
}

func equalVec(a, b domain.Vec) bool {
	for i := range max(len(a), len(b)) {
		if a.At(domain.SlotID(i)) != b.At(domain.SlotID(i)) {
			return false
		}
	}
	return true
}

// checkDevices is CheckInvariants' device part.
func checkDevices(agents []domain.Agent, kernels []domain.Kernel) []error {
	var errs []error
	devices := map[domain.AgentID]map[string]domain.Device{}
	for _, a := range agents {
		devices[a.ID] = map[string]domain.Device{}
		for _, d := range a.Devices {
			devices[a.ID][d.ID] = d
		}
	}
	held := map[domain.AgentID]map[string]domain.Quantity{}
	for _, k := range kernels {
		if k.Status == domain.KernelPending && len(k.Devices) > 0 {
			errs = append(errs, fmt.Errorf("kernel %s is PENDING but holds devices %v", k.ID, k.Devices))
		}
		if !k.Status.HoldsResources() {
			continue
		}
		for _, g := range k.Devices {
			d, ok := devices[k.Agent][g.Device]
			if !ok {
				errs = append(errs, fmt.Errorf("kernel %s holds device %s, not a device of agent %s", k.ID, g.Device, k.Agent))
				continue
			}
			if g.Slot != d.Slot || g.Share <= 0 || d.Slot == "cuda.device" && g.Share != domain.WholeShare {
				errs = append(errs, fmt.Errorf("kernel %s holds %d of device %s (slot %s) as %s", k.ID, g.Share, g.Device, d.Slot, g.Slot))
			}
			if held[k.Agent] == nil {
				held[k.Agent] = map[string]domain.Quantity{}
			}
			held[k.Agent][g.Device] += g.Share
			if q := held[k.Agent][g.Device]; q > domain.WholeShare {
				errs = append(errs, fmt.Errorf("device %s of agent %s is assigned beyond one whole (%d thousandths); kernel %s is one holder",
					g.Device, k.Agent, q, k.ID))
			}
		}
	}
	return errs
}
