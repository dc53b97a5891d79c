package framework

import (
	"fmt"
	"strings"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// devicePools is one agent's device pools by slot id; nil for the many
// agents that report no devices, which then cost placement nothing.
type devicePools map[domain.SlotID]*domain.DevicePool

// initDevices builds agent i's pools and lowers its free slots to what the
// pools can still grant. With free capped this way, a request that fits
// the slot vector also fits the devices (whole devices are counted whole,
// shares may be split), so the index and the maxima stay exact without
// knowing about devices.
func (st *State) initDevices(i int, a *domain.Agent) {
	if len(a.Devices) == 0 {
		return
	}
	byName := domain.NewDevicePools(a.Devices, st.Snap.DeviceHeld[a.ID])
	pools := devicePools{}
	for name, p := range byName {
		id, ok := st.Snap.Slots.Lookup(name)
		if !ok {
			continue
		}
		pools[id] = p
		f := &st.Free[i*st.N+int(id)]
		*f = min(*f, p.Available(st.Snap.Slots.Type(id).Kind))
	}
	if st.devices == nil {
		st.devices = make([]devicePools, len(st.Agents))
	}
	st.devices[i] = pools
}

func (st *State) hasDevices(a int32) bool { return st.devices != nil && st.devices[a] != nil }

// grant assigns agent a's devices for one kernel's request. It returns
// false, holding nothing, when some slot's devices cannot cover it (only a
// fractional request of a whole-device slot can get here: the free cap
// above makes every other fit coverable).
func (st *State) grant(a int32, req *Request) ([]domain.DeviceGrant, bool) {
	if st.devices == nil || st.devices[a] == nil {
		return nil, true
	}
	pools := st.devices[a]
	var out []domain.DeviceGrant
	for _, am := range req.Amounts {
		p := pools[am.Slot]
		if p == nil {
			continue
		}
		g, ok := p.Assign(st.Snap.Slots.Type(am.Slot).Kind, am.Q)
		if !ok {
			st.giveDevices(a, out)
			return nil, false
		}
		out = append(out, g...)
	}
	return out, true
}

// giveDevices returns grants to agent a's pools.
func (st *State) giveDevices(a int32, grants []domain.DeviceGrant) {
	if len(grants) == 0 || st.devices == nil || st.devices[a] == nil {
		return
	}
	for _, p := range st.devices[a] {
		p.Give(grants)
	}
}

// DevicePool returns agent a's pool of slot, nil when it has none. Tests
// and explanations read it; it must not be changed.
func (st *State) DevicePool(a int32, slot domain.SlotID) *domain.DevicePool {
	if st.devices == nil || st.devices[a] == nil {
		return nil
	}
	return st.devices[a][slot]
}

// deviceBlocker explains a grant that failed on an agent that fits by
// count: the slot's free devices cannot cover a fractional whole-device
// request.
func (st *State) deviceBlocker(a int32, req *Request, scope string, kind BlockerKind) []Blocker {
	for _, am := range req.Amounts {
		p := st.DevicePool(a, am.Slot)
		if p == nil {
			continue
		}
		t := st.Snap.Slots.Type(am.Slot)
		if avail := p.Available(t.Kind); t.Kind != domain.KindShares && am.Q%domain.WholeShare != 0 || avail < am.Q {
			return []Blocker{{Kind: kind, Scope: scope, Slot: t.Name, Requested: am.Q, Available: avail,
				Capacity: domain.Quantity(len(p.Devices)) * domain.WholeShare,
				Detail:   "devices are handed out whole: request whole " + t.Name}}
		}
	}
	return []Blocker{{Kind: kind, Scope: scope}}
}

type devDetailKey struct {
	c    *candidates
	slot domain.SlotID
}

type devDetail struct {
	version uint64
	text    string
}

// deviceDetail says, for a slot handed out as devices, which eligible
// agent has the most of it free and which devices those are, so "why"
// speaks of devices and not only of a count: "a3 has 1 of 2 devices free
// (cuda:1)". Empty for a slot no candidate has devices of. Blocked
// sessions of one round ask the same question many times, so the answer
// is kept until a reservation changes it.
func (st *State) deviceDetail(c *candidates, slot domain.SlotID) string {
	if st.devices == nil {
		return ""
	}
	key := devDetailKey{c, slot}
	if d, ok := st.devDetails[key]; ok && d.version == st.version {
		return d.text
	}
	kind := st.Snap.Slots.Type(slot).Kind
	best := int32(-1)
	var bestFree domain.Quantity
	for _, a := range c.idx {
		p := st.DevicePool(a, slot)
		if p == nil {
			continue
		}
		if f := p.Available(kind); best < 0 || f > bestFree {
			best, bestFree = a, f
		}
	}
	text := ""
	if best >= 0 {
		p := st.DevicePool(best, slot)
		var free []string
		for i, d := range p.Devices {
			switch {
			case p.Free[i] == domain.WholeShare:
				free = append(free, d.ID)
			case kind == domain.KindShares && p.Free[i] > 0:
				free = append(free, fmt.Sprintf("%s: %s free", d.ID, domain.FormatQuantity(kind, p.Free[i])))
			}
		}
		list := "none"
		if len(free) > 0 {
			list = strings.Join(free, ", ")
		}
		text = fmt.Sprintf("%s has %s of %d devices free (%s)", st.Agents[best].ID,
			domain.FormatQuantity(kind, bestFree), len(p.Devices), list)
	}
	if st.devDetails == nil {
		st.devDetails = map[devDetailKey]devDetail{}
	}
	st.devDetails[key] = devDetail{version: st.version, text: text}
	return text
}
