package planguard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// Session is a plan session's stored state.
type Session struct {
	Status  domain.SessionStatus
	Group   string
	Kernels map[domain.KernelID]Kernel
}

// Kernel is a plan kernel's stored state.
type Kernel struct {
	Status    domain.KernelStatus
	Requested domain.Vec
}

// Agent is an agent's stored state as the guards need it. Evaluate and
// Release change Occupied and KernelCount in place and mark the agent
// changed.
type Agent struct {
	ID          domain.AgentID
	Group       string
	Status      domain.AgentStatus
	Schedulable bool
	Capacity    domain.Vec
	Occupied    domain.Vec
	KernelCount int
	MaxKernels  int
	// Devices are the agent's reported devices and Held the share of each
	// (by id) that its live kernels hold, read under the agent's lock.
	Devices []domain.Device
	Held    map[string]domain.Quantity
	changed bool
}

// Release gives back what one kernel held on the agent.
func (a *Agent) Release(requested domain.Vec) {
	a.Occupied.Sub(requested)
	a.KernelCount--
	a.changed = true
}

// Changed returns the agents whose occupancy changed, by id, which is also
// the order engines lock and write them in.
func Changed(agents map[domain.AgentID]*Agent) []*Agent {
	var out []*Agent
	for _, a := range agents {
		if a.changed {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y *Agent) int { return strings.Compare(string(x.ID), string(y.ID)) })
	return out
}

// KernelWrite is one kernel to move PENDING → SCHEDULED onto an agent.
type KernelWrite struct {
	Kernel  domain.KernelID
	Agent   domain.AgentID
	Devices []domain.DeviceGrant
}

// Result is what applying a plan writes and what it reports.
type Result struct {
	Applied  []domain.SessionID
	Kernels  []KernelWrite
	Rejected []store.Rejection
}

// Evaluate judges the plan's placements in order against the stored state,
// as if each accepted placement had already been written, so a later
// placement sees what an earlier one took. Sessions and agents are updated
// in place for the accepted placements.
func Evaluate(reg *domain.Registry, plan framework.Plan, sessions map[domain.SessionID]*Session,
	agents map[domain.AgentID]*Agent) Result {
	var res Result
	for _, p := range plan.Placements {
		if rej, ok := check(reg, plan.Group, p, sessions, agents); !ok {
			res.Rejected = append(res.Rejected, rej)
			continue
		}
		for _, kp := range p.Kernels {
			a := agents[kp.Agent]
			a.Occupied.Add(sessions[p.Session].Kernels[kp.Kernel].Requested)
			a.KernelCount++
			a.changed = true
			for _, g := range kp.Devices {
				if a.Held == nil {
					a.Held = map[string]domain.Quantity{}
				}
				a.Held[g.Device] += g.Share
			}
			res.Kernels = append(res.Kernels, KernelWrite{Kernel: kp.Kernel, Agent: kp.Agent, Devices: kp.Devices})
		}
		sessions[p.Session].Status = domain.SessionScheduled
		res.Applied = append(res.Applied, p.Session)
	}
	return res
}

type demand struct {
	slots   domain.Vec
	kernels int
	// devices is what this placement's earlier kernels take of each of
	// the agent's devices.
	devices map[string]domain.Quantity
}

// checkGrants re-checks one kernel's device grants against the agent's
// devices as locked: every grant names a device of the agent, in the slot
// it counts toward; a whole-device slot is granted whole devices; no
// device is held beyond one whole by the live kernels, the plan's earlier
// placements and this one together; and for every slot the agent has
// devices of, the grants add up to the kernel's request. It returns what
// is wrong, or "".
func checkGrants(reg *domain.Registry, a *Agent, kp framework.KernelPlacement, req domain.Vec, d *demand) string {
	if len(a.Devices) == 0 {
		if len(kp.Devices) > 0 {
			return "granted devices on an agent that reports none"
		}
		return ""
	}
	byID := make(map[string]domain.Device, len(a.Devices))
	has := map[string]bool{}
	for _, dev := range a.Devices {
		byID[dev.ID] = dev
		has[dev.Slot] = true
	}
	sum := map[string]domain.Quantity{}
	for _, g := range kp.Devices {
		dev, ok := byID[g.Device]
		if !ok {
			return fmt.Sprintf("device %s is not the agent's", g.Device)
		}
		if g.Slot != dev.Slot || g.Share <= 0 || g.Share > domain.WholeShare {
			return fmt.Sprintf("grant of %s: slot %s share %d does not fit device of slot %s", g.Device, g.Slot, g.Share, dev.Slot)
		}
		if id, ok := reg.Lookup(dev.Slot); ok && reg.Type(id).Kind != domain.KindShares && g.Share != domain.WholeShare {
			return fmt.Sprintf("device %s is handed out whole, granted %d thousandths", g.Device, g.Share)
		}
		if d.devices == nil {
			d.devices = map[string]domain.Quantity{}
		}
		d.devices[g.Device] += g.Share
		if held := a.Held[g.Device] + d.devices[g.Device]; held > domain.WholeShare {
			return fmt.Sprintf("device %s is already held (%d thousandths with this grant)", g.Device, held)
		}
		sum[dev.Slot] += g.Share
	}
	for slot := range has {
		id, ok := reg.Lookup(slot)
		if !ok {
			continue
		}
		want := req.At(id)
		if reg.Type(id).Kind != domain.KindShares {
			want = (want + domain.WholeShare - 1) / domain.WholeShare * domain.WholeShare
		}
		if sum[slot] != want {
			return fmt.Sprintf("grants of %s add up to %d, the request needs %d", slot, sum[slot], want)
		}
	}
	return ""
}

func check(reg *domain.Registry, group string, p framework.Placement, sessions map[domain.SessionID]*Session,
	agents map[domain.AgentID]*Agent) (store.Rejection, bool) {
	reject := func(reason store.RejectReason, agent domain.AgentID, slot, format string, args ...any) (store.Rejection, bool) {
		return store.Rejection{Session: p.Session, Reason: reason, Agent: agent, Slot: slot,
			Detail: fmt.Sprintf(format, args...)}, false
	}
	s, ok := sessions[p.Session]
	if !ok {
		return reject(store.RejectSessionMissing, "", "", "session does not exist")
	}
	if s.Status != domain.SessionPending {
		return reject(store.RejectNotPending, "", "", "session is %s", s.Status)
	}
	if s.Group != group {
		return reject(store.RejectWrongGroup, "", "", "session belongs to group %q, the plan to %q", s.Group, group)
	}
	if len(p.Kernels) != len(s.Kernels) {
		return reject(store.RejectKernelMismatch, "", "", "plan places %d kernels, the session has %d", len(p.Kernels), len(s.Kernels))
	}
	seen := make(map[domain.KernelID]bool, len(p.Kernels))
	need := make(map[domain.AgentID]*demand)
	for _, kp := range p.Kernels {
		k, ok := s.Kernels[kp.Kernel]
		if !ok || seen[kp.Kernel] {
			return reject(store.RejectKernelMismatch, kp.Agent, "", "kernel %s is not the session's or is placed twice", kp.Kernel)
		}
		seen[kp.Kernel] = true
		if k.Status != domain.KernelPending {
			return reject(store.RejectKernelMismatch, kp.Agent, "", "kernel %s is %s", kp.Kernel, k.Status)
		}
		if !sameVec(kp.Slots, k.Requested) {
			return reject(store.RejectKernelMismatch, kp.Agent, "", "kernel %s: planned slots differ from its request", kp.Kernel)
		}
		a, ok := agents[kp.Agent]
		if !ok {
			return reject(store.RejectAgentMissing, kp.Agent, "", "agent does not exist")
		}
		if a.Group != group {
			return reject(store.RejectWrongGroup, kp.Agent, "", "agent belongs to group %q, the plan to %q", a.Group, group)
		}
		if a.Status != domain.AgentAlive || !a.Schedulable {
			return reject(store.RejectAgentUnavailable, kp.Agent, "", "agent is %s, schedulable=%t", a.Status, a.Schedulable)
		}
		d := need[kp.Agent]
		if d == nil {
			d = &demand{slots: reg.NewVec()}
			need[kp.Agent] = d
		}
		d.slots.Add(k.Requested)
		d.kernels++
		if detail := checkGrants(reg, a, kp, k.Requested, d); detail != "" {
			return reject(store.RejectDevices, kp.Agent, "", "kernel %s: %s", kp.Kernel, detail)
		}
	}
	// Agents in id order, so the reason reported does not depend on map order.
	ids := make([]domain.AgentID, 0, len(need))
	for id := range need {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a, d := agents[id], need[id]
		free := a.Capacity.Clone()
		free.Sub(a.Occupied)
		if short, fits := domain.Fits(d.slots, free); !fits {
			name := reg.Type(short.Slot).Name
			return reject(store.RejectCapacity, id, name, "%s: requested %s, free %s",
				name, reg.Format(short.Slot, short.Requested), reg.Format(short.Slot, short.Available))
		}
		if a.MaxKernels > 0 && a.KernelCount+d.kernels > a.MaxKernels {
			return reject(store.RejectMaxKernels, id, framework.KernelsSlot, "agent holds %d of at most %d kernels, %d more requested",
				a.KernelCount, a.MaxKernels, d.kernels)
		}
	}
	return store.Rejection{}, true
}

// sameVec compares two vectors, a missing slot counting as zero.
func sameVec(a, b domain.Vec) bool {
	n := max(len(a), len(b))
	for i := range n {
		if a.At(domain.SlotID(i)) != b.At(domain.SlotID(i)) {
			return false
		}
	}
	return true
}

// DecodeKernel builds a kernel's guard state from its stored columns.
func DecodeKernel(reg *domain.Registry, id, status, requested string) (Kernel, error) {
	st, err := domain.ParseKernelStatus(status)
	if err != nil {
		return Kernel{}, codec.Corrupt("kernels", id, "status", err)
	}
	req, err := codec.Slots(reg, "kernels", id, "requested", requested)
	return Kernel{Status: st, Requested: req}, err
}

// DecodeAgent fills an agent's guard state from its stored columns.
func DecodeAgent(reg *domain.Registry, a *Agent, status, capacity, occupied string) error {
	var err error
	if a.Status, err = domain.ParseAgentStatus(status); err != nil {
		return codec.Corrupt("agents", string(a.ID), "status", err)
	}
	if a.Capacity, err = codec.Slots(reg, "agents", string(a.ID), "capacity", capacity); err != nil {
		return err
	}
	a.Occupied, err = codec.Slots(reg, "agents", string(a.ID), "occupied", occupied)
	return err
}

// IDs lists the plan's sessions and agents once each, in plan order.
func IDs(plan framework.Plan) (sessions, agents []string) {
	seenS, seenA := map[domain.SessionID]bool{}, map[domain.AgentID]bool{}
	for _, p := range plan.Placements {
		if !seenS[p.Session] {
			seenS[p.Session] = true
			sessions = append(sessions, string(p.Session))
		}
		for _, k := range p.Kernels {
			if !seenA[k.Agent] {
				seenA[k.Agent] = true
				agents = append(agents, string(k.Agent))
			}
		}
	}
	return sessions, agents
}
