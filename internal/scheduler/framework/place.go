package framework

import (
	"fmt"
	"slices"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Place tries to put every kernel of s on agents chosen by sel. On success
// it reserves them in the round state and returns one placement per kernel.
// Otherwise it reserves nothing — a partial gang is rolled back — and
// returns at least one blocker saying why; the blockers may be reused by
// the next Place, so a caller that keeps them copies them.
func (st *State) Place(s *Session, sel Selector) ([]KernelPlacement, []Blocker) {
	if len(s.PerKernel) == 0 {
		return nil, []Blocker{{Kind: BlockGang, Scope: "session:" + string(s.Pending.Session.ID),
			Impossible: true, Detail: "session has no kernels"}}
	}
	group := st.scope
	if st.usable == 0 {
		return nil, []Blocker{{Kind: BlockNoAgents, Scope: group}}
	}
	arch := s.Pending.Session.Architecture
	if !st.HasArchitecture(arch) {
		return nil, []Blocker{{Kind: BlockArchitecture, Scope: group, Detail: arch}}
	}
	if b := st.planTiers(s, arch); b != nil {
		return nil, b
	}
	if !s.MultiNode {
		return st.placeWhole(s, sel, group)
	}
	return st.placeGang(s, sel)
}

// placeWhole puts all kernels of a single-node session on one agent.
func (st *State) placeWhole(s *Session, sel Selector, scope string) ([]KernelPlacement, []Blocker) {
	a := st.selectIn(s, sel, &s.Total)
	if a < 0 {
		return nil, st.capacityBlockers(s.eligible, &s.Total, BlockCapacity, scope)
	}
	var grants [][]domain.DeviceGrant
	if st.hasDevices(a) {
		grants = make([][]domain.DeviceGrant, len(s.PerKernel))
	}
	for k := range grants {
		g, ok := st.grant(a, &s.PerKernel[k])
		if !ok {
			for _, back := range grants[:k] {
				st.giveDevices(a, back)
			}
			return nil, st.deviceBlocker(a, &s.PerKernel[k], scope, BlockCapacity)
		}
		grants[k] = g
	}
	st.Reserve(a, &s.Total)
	st.Cursor = st.Agents[a].ID
	out := st.placed.take(len(s.PerKernel))
	for k := range s.PerKernel {
		out[k] = KernelPlacement{Kernel: s.Pending.Kernels[k].ID, Agent: st.Agents[a].ID, Slots: s.PerKernel[k].Vec}
		if grants != nil {
			out[k].Devices = grants[k]
		}
	}
	return out, nil
}

// placeGang places each kernel of a multi-node session separately, all or
// nothing: the first kernel that does not fit undoes the ones before it.
func (st *State) placeGang(s *Session, sel Selector) ([]KernelPlacement, []Blocker) {
	cursor := st.Cursor
	chosen := make([]int32, 0, len(s.PerKernel))
	var grants [][]domain.DeviceGrant
	// Counted in the current generation: a count of stale misses, which
	// the first lookup below drops, would re-extend the slice over them
	// and over a miss found with part of the gang reserved.
	misses := len(st.liveMisses(s.eligible))
	for k := range s.PerKernel {
		req := &s.PerKernel[k]
		a := st.selectIn(s, sel, req)
		if a < 0 {
			scope := fmt.Sprintf("kernel:%d/%d", k+1, len(s.PerKernel))
			blockers := st.capacityBlockers(s.eligible, req, BlockGang, scope)
			for j, b := range chosen {
				st.unreserve(b, &s.PerKernel[j])
				if grants != nil {
					st.giveDevices(b, grants[j])
				}
			}
			// The rollback returns the round to where it was before the
			// gang, when every older miss held; one found with part of the
			// gang reserved may not hold without it.
			if len(chosen) > 0 && s.eligible.cached() {
				s.eligible.misses = s.eligible.misses[:misses]
			}
			st.Cursor = cursor
			return nil, blockers
		}
		g, ok := st.grant(a, req)
		if !ok {
			blockers := st.deviceBlocker(a, req, fmt.Sprintf("kernel:%d/%d", k+1, len(s.PerKernel)), BlockGang)
			for j, b := range chosen {
				st.unreserve(b, &s.PerKernel[j])
				if grants != nil {
					st.giveDevices(b, grants[j])
				}
			}
			st.Cursor = cursor
			return nil, blockers
		}
		st.Reserve(a, req)
		st.Cursor = st.Agents[a].ID
		chosen = append(chosen, a)
		if st.devices != nil {
			// Only groups with devices pay for keeping the gang's grants.
			grants = append(grants, g)
		}
	}
	out := st.placed.take(len(chosen))
	for k, a := range chosen {
		out[k] = KernelPlacement{Kernel: s.Pending.Kernels[k].ID, Agent: st.Agents[a].ID, Slots: s.PerKernel[k].Vec}
		if grants != nil {
			out[k].Devices = grants[k]
		}
	}
	return out, nil
}

// selectIn asks the selector tier by tier; -1 when no tier has a fit. A
// Ranker is answered from the round's index wherever the tier is a whole
// candidate set less a few agents; everything else goes to Select. When
// every tier fails, no eligible agent fits: with the tiers' union being
// the eligible set, the request is remembered as a miss.
func (st *State) selectIn(s *Session, sel Selector, req *Request) int32 {
	r, ranked := sel.(Ranker)
	// Misses go with the index: a plain Selector keeps the round as it
	// was, the reference the index is tested against.
	if s.eligible.cached() && (ranked && st.missed(s.eligible, req) || st.cannotFit(s.eligible, req)) {
		return -1
	}
	for i := range s.tiers {
		t := &s.tiers[i]
		var a int32
		if ranked && t.all != nil {
			a = st.index(t.all, r).selectFirst(req, t.except)
		} else {
			a = sel.Select(st, t.agents(), req)
		}
		if a >= 0 {
			return a
		}
	}
	if ranked && s.eligible.cached() {
		s.eligible.misses = append(s.eligible.misses, req)
	}
	return -1
}

func (c *candidates) cached() bool { return !c.custom }

// agents returns the tier as a list, filling it in for a tier drawn from a
// whole candidate set.
func (t *tier) agents() []int32 {
	if t.list == nil && t.all != nil {
		t.list = make([]int32, 0, len(t.all.idx)-len(t.except))
		for _, a := range t.all.idx {
			if !contains(t.except, a) {
				t.list = append(t.list, a)
			}
		}
	}
	return t.list
}

// planTiers works out which agents the session may use, in preference
// order: designated agents first (only them when strict), and agents the
// session failed on before last. Only the strict case narrows the agents
// the session may use at all; otherwise the tiers together are the whole
// architecture's set, which keeps its cached maxima and its index.
func (st *State) planTiers(s *Session, arch string) []Blocker {
	base := st.archCandidates(arch)
	sess := &s.Pending.Session
	s.eligible = base
	if len(sess.DesignatedAgents) == 0 && len(sess.AvoidAgents) == 0 {
		s.tiers = base.tiers
		return nil
	}
	in := st.members(arch, sess.DesignatedAgents)
	avoid := st.members(arch, sess.AvoidAgents)
	var tiers []tier
	switch {
	case len(sess.DesignatedAgents) == 0:
		tiers = []tier{{all: base}}
	case sess.DesignatedStrict:
		if len(in) == 0 {
			return []Blocker{{Kind: BlockNoAgents, Scope: "designated",
				Detail: fmt.Sprint(sess.DesignatedAgents)}}
		}
		tiers = []tier{{list: in}}
		s.eligible = &candidates{idx: in, custom: true}
	default:
		tiers = []tier{{list: in}, {all: base, except: in}}
	}
	s.tiers = nil
	keep := func(t tier) {
		if t.all != nil && len(t.all.idx) > len(t.except) || len(t.list) > 0 {
			s.tiers = append(s.tiers, t)
		}
	}
	for _, t := range tiers {
		if t.all == nil {
			var first, later []int32
			for _, a := range t.list {
				if contains(avoid, a) {
					later = append(later, a)
				} else {
					first = append(first, a)
				}
			}
			keep(tier{list: first})
			keep(tier{list: later})
			continue
		}
		var later []int32
		for _, a := range avoid {
			if !contains(t.except, a) {
				later = append(later, a)
			}
		}
		except := append(slices.Clone(t.except), later...)
		slices.Sort(except)
		keep(tier{all: t.all, except: except})
		keep(tier{list: later})
	}
	return nil
}

// members returns the usable agents of the architecture among ids, sorted
// by index and without repeats.
func (st *State) members(arch string, ids []domain.AgentID) []int32 {
	var out []int32
	for _, id := range ids {
		i, ok := st.byID[id]
		if !ok {
			continue
		}
		if a := &st.Agents[i]; a.Usable && (arch == "" || a.Architecture == arch) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// capacityBlockers explains why req fits on none of c: one blocker per slot
// no candidate has enough of, or one without a slot when every slot is free
// somewhere but never all together.
func (st *State) capacityBlockers(c *candidates, req *Request, kind BlockerKind, scope string) []Blocker {
	st.refresh(c)
	out := st.blocked[:0]
	for _, am := range req.Amounts {
		if am.Q > c.maxFree[am.Slot] {
			out = append(out, Blocker{
				Kind: kind, Scope: scope, Slot: st.Snap.Slots.Type(am.Slot).Name,
				Requested: am.Q, Available: max(c.maxFree[am.Slot], 0), Capacity: c.maxCap[am.Slot],
				Detail: st.deviceDetail(c, am.Slot),
			})
		}
	}
	if c.maxRoom >= 0 && req.Kernels > c.maxRoom {
		out = append(out, Blocker{
			Kind: kind, Scope: scope, Slot: KernelsSlot, Requested: domain.Quantity(req.Kernels),
			Available: domain.Quantity(max(c.maxRoom, 0)), Capacity: domain.Quantity(c.maxKCap),
		})
	}
	if len(out) == 0 {
		out = append(out, Blocker{Kind: kind, Scope: scope})
	}
	st.blocked = out
	return out
}
