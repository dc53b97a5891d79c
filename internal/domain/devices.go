package domain

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// WholeShare is one whole device in a grant's Share, which is kept in
// thousandths like count and share quantities.
const WholeShare = Quantity(1000)

// Device is one accelerator an agent reports. Devices are data, not only a
// count: placement hands specific devices to kernels so that two kernels
// never both believe they own "a GPU".
type Device struct {
	// ID is stable across agent restarts: the GPU's UUID where a driver
	// reports one, "cuda:<index>" for declared fake devices.
	ID string `json:"id"`
	// Index is what the runtime exposes to the kernel (CUDA_VISIBLE_DEVICES
	// takes indexes or UUIDs; indexes keep fake devices readable).
	Index int `json:"index"`
	// Slot is the slot type the device counts toward: cuda.device for
	// devices handed out whole, cuda.shares for devices shared by fraction.
	Slot   string `json:"slot"`
	Model  string `json:"model,omitempty"`
	Memory int64  `json:"memory,omitempty"` // bytes
}

// DeviceGrant is the part of one device a kernel holds.
type DeviceGrant struct {
	Device string `json:"device"`
	Index  int    `json:"index"`
	Slot   string `json:"slot"`
	// Share is in thousandths of the device: WholeShare for cuda.device,
	// the packed fraction for cuda.shares.
	Share Quantity `json:"share"`
	// Memory is the device memory, in bytes, the kernel may use: the
	// device's memory times its share.
	Memory int64 `json:"memory,omitempty"`
}

// ValidateDevices checks an agent's device list: ids unique and non-empty,
// indexes unique per slot, every slot known to reg, memory not negative.
func ValidateDevices(reg *Registry, devs []Device) error {
	ids := map[string]bool{}
	idx := map[string]bool{}
	for i, d := range devs {
		if d.ID == "" {
			return fmt.Errorf("devices[%d]: id is empty", i)
		}
		if ids[d.ID] {
			return fmt.Errorf("devices[%d]: id %q repeats", i, d.ID)
		}
		ids[d.ID] = true
		if d.Index < 0 {
			return fmt.Errorf("devices[%d]: index %d is negative", i, d.Index)
		}
		key := d.Slot + "/" + strconv.Itoa(d.Index)
		if idx[key] {
			return fmt.Errorf("devices[%d]: index %d repeats for slot %s", i, d.Index, d.Slot)
		}
		idx[key] = true
		if reg != nil {
			if _, ok := reg.Lookup(d.Slot); !ok {
				return fmt.Errorf("devices[%d]: slot %q: %w", i, d.Slot, ErrUnknownSlot)
			}
		}
		if d.Memory < 0 {
			return fmt.Errorf("devices[%d]: memory %d is negative", i, d.Memory)
		}
	}
	return nil
}

// DeviceCapacity is what devices add up to per slot: one whole unit
// (WholeShare thousandths) per device, which is what cuda.device counts
// and what one device offers in cuda.shares.
func DeviceCapacity(reg *Registry, devs []Device) Vec {
	v := reg.NewVec()
	for _, d := range devs {
		if id, ok := reg.Lookup(d.Slot); ok {
			v[id] = AddSat(v[id], WholeShare)
		}
	}
	return v
}

// ParseFakeDevices reads a declaration of fake devices such as "cuda:4" or
// "cuda.shares:2,cuda:1", for tests and development: "cuda" and
// "cuda.device" give whole devices, "cuda.shares" fractional ones, each
// with a made-up model and 16 GiB. Indexes count up per slot from zero.
func ParseFakeDevices(s string) ([]Device, error) {
	var out []Device
	next := map[string]int{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, n, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("devices %q: want KIND:COUNT such as cuda:4", part)
		}
		slot := kind
		switch kind {
		case "cuda", "cuda.device":
			slot = "cuda.device"
		case "cuda.shares":
		default:
			return nil, fmt.Errorf("devices %q: kind must be cuda, cuda.device or cuda.shares", part)
		}
		count, err := strconv.Atoi(n)
		if err != nil || count < 0 || count > 64 {
			return nil, fmt.Errorf("devices %q: count must be 0 to 64", part)
		}
		for range count {
			i := next[slot]
			next[slot]++
			id := "cuda:" + strconv.Itoa(i)
			if slot == "cuda.shares" {
				id = "cuda-shared:" + strconv.Itoa(i)
			}
			out = append(out, Device{ID: id, Index: i, Slot: slot, Model: "Fake GPU", Memory: 16 << 30})
		}
	}
	return out, nil
}

// DevicePool is one agent's devices of one slot and how much of each is
// free, in the devices' order. It is what placement assigns from.
type DevicePool struct {
	Devices []Device
	// Free is each device's unheld share in thousandths (WholeShare when
	// no kernel holds any of it).
	Free []Quantity
}

// NewDevicePools groups an agent's devices by slot, sorted by index, and
// takes what live kernels hold (by device id) off their free share. A
// grant for a device the agent no longer reports is ignored: it frees
// nothing and blocks nothing.
func NewDevicePools(devs []Device, held map[string]Quantity) map[string]*DevicePool {
	if len(devs) == 0 {
		return nil
	}
	pools := map[string]*DevicePool{}
	sorted := slices.Clone(devs)
	slices.SortFunc(sorted, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.ID, b.ID))
	})
	for _, d := range sorted {
		p := pools[d.Slot]
		if p == nil {
			p = &DevicePool{}
			pools[d.Slot] = p
		}
		p.Devices = append(p.Devices, d)
		p.Free = append(p.Free, max(WholeShare-held[d.ID], 0))
	}
	return pools
}

// Available is what the pool can still grant in the slot's unit: whole
// free devices for a count slot, the sum of free shares for a share slot.
func (p *DevicePool) Available(kind Kind) Quantity {
	var q Quantity
	for _, f := range p.Free {
		if kind == KindShares {
			q += f
		} else if f == WholeShare {
			q += WholeShare
		}
	}
	return q
}

// Assign picks devices for q of the pool's slot and takes them off Free.
// Count slots get ceil(q/WholeShare) whole free devices, lowest index
// first. Share slots are packed: the fullest device that still holds the
// whole request (best fit, so big holes stay for big requests), else the
// request is split over the devices with the most free share first. It
// returns false, changing nothing, when the pool cannot grant q.
func (p *DevicePool) Assign(kind Kind, q Quantity) ([]DeviceGrant, bool) {
	if q <= 0 {
		return nil, true
	}
	grant := func(i int, share Quantity) DeviceGrant {
		d := p.Devices[i]
		return DeviceGrant{Device: d.ID, Index: d.Index, Slot: d.Slot, Share: share,
			Memory: int64(float64(d.Memory) * float64(share) / float64(WholeShare))}
	}
	if kind != KindShares {
		n := int((q + WholeShare - 1) / WholeShare)
		var picks []int
		for i, f := range p.Free {
			if len(picks) == n {
				break
			}
			if f == WholeShare {
				picks = append(picks, i)
			}
		}
		if len(picks) < n {
			return nil, false
		}
		out := make([]DeviceGrant, len(picks))
		for j, i := range picks {
			p.Free[i] = 0
			out[j] = grant(i, WholeShare)
		}
		return out, true
	}
	best := -1
	for i, f := range p.Free {
		if f >= q && (best < 0 || f < p.Free[best]) {
			best = i
		}
	}
	if best >= 0 {
		p.Free[best] -= q
		return []DeviceGrant{grant(best, q)}, true
	}
	if p.Available(kind) < q {
		return nil, false
	}
	order := make([]int, len(p.Free))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p.Free[b], p.Free[a]) })
	var out []DeviceGrant
	left := q
	for _, i := range order {
		if left == 0 {
			break
		}
		take := min(p.Free[i], left)
		if take <= 0 {
			continue
		}
		p.Free[i] -= take
		left -= take
		out = append(out, grant(i, take))
	}
	slices.SortFunc(out, func(a, b DeviceGrant) int { return cmp.Compare(a.Index, b.Index) })
	return out, true
}

// Give returns grants taken by Assign; grants for other devices are
// ignored.
func (p *DevicePool) Give(grants []DeviceGrant) {
	for _, g := range grants {
		for i, d := range p.Devices {
			if d.ID == g.Device {
				p.Free[i] = min(p.Free[i]+g.Share, WholeShare)
			}
		}
	}
}

// DeviceHeld sums grants by device id.
func DeviceHeld(grants ...[]DeviceGrant) map[string]Quantity {
	out := map[string]Quantity{}
	for _, gs := range grants {
		for _, g := range gs {
			out[g.Device] += g.Share
		}
	}
	return out
}
