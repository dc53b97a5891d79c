package domain

import "fmt"

// Built-in request floors and defaults, by slot name. A group's own
// DefaultSlots and MinSlots are laid over them: a group may raise the floor
// but never lower cpu or mem to zero, since a kernel that asks for neither
// gets no cgroup limit and is charged nothing against any quota.
var (
	floorSlots   = map[string]string{"cpu": "0.01", "mem": "16m"}
	builtinSlots = map[string]string{"cpu": "1", "mem": "1g"}
)

func namedVec(reg *Registry, m map[string]string) Vec {
	v := reg.NewVec()
	for name, s := range m {
		id, ok := reg.Lookup(name)
		if !ok {
			continue // a registry without cpu or mem has nothing to floor
		}
		q, err := ParseQuantity(reg.Type(id).Kind, s)
		if err != nil {
			panic(fmt.Sprintf("built-in slot quantity %s=%q: %v", name, s, err)) // constants above
		}
		v[id] = q
	}
	return v
}

// EffectiveMinSlots is the least a kernel of group g may ask for of each
// slot: the group's MinSlots, raised to the built-in floor for cpu and mem.
func (g ResourceGroup) EffectiveMinSlots(reg *Registry) Vec {
	v := namedVec(reg, floorSlots)
	for i := range v {
		v[i] = max(v[i], g.MinSlots.At(SlotID(i)))
	}
	return v
}

// EffectiveDefaultSlots is what a kernel of group g gets for each slot its
// request does not name: the group's DefaultSlots where set, else the
// built-in default (cpu 1, mem 1g), never below the effective minimum.
func (g ResourceGroup) EffectiveDefaultSlots(reg *Registry) Vec {
	v := namedVec(reg, builtinSlots)
	for i := range v {
		if d := g.DefaultSlots.At(SlotID(i)); d != 0 {
			v[i] = d
		}
	}
	floor := g.EffectiveMinSlots(reg)
	for i := range v {
		v[i] = max(v[i], floor[i])
	}
	return v
}

// BelowMinimum is a slot a kernel request asks less of than its group's
// minimum.
type BelowMinimum struct {
	Slot      SlotID
	Requested Quantity
	Minimum   Quantity
}

// CompleteRequest fills the slots a request does not name with the group's
// defaults and checks the result against the group's minimums. named
// reports whether the user named a slot; a slot named with zero is kept at
// zero, so a user can say "no GPU" where a group defaults to one, and is
// then judged by the minimum like any other value.
func (g ResourceGroup) CompleteRequest(reg *Registry, req Vec, named func(SlotID) bool) (Vec, *BelowMinimum) {
	out := reg.NewVec()
	copy(out, req)
	def := g.EffectiveDefaultSlots(reg)
	for i := range out {
		if !named(SlotID(i)) {
			out[i] = def[i]
		}
	}
	floor := g.EffectiveMinSlots(reg)
	for i := range out {
		if out[i] < floor[i] {
			return out, &BelowMinimum{Slot: SlotID(i), Requested: out[i], Minimum: floor[i]}
		}
	}
	return out, nil
}
