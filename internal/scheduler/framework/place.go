package framework

import (
	"fmt"
	"slices"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Place tries to put every kernel of s on agents chosen by sel. On success
// it reserves them in the round state and returns one placement per kernel.
// Otherwise it reserves nothing — a partial gang is rolled back — and
// returns at least one blocker saying why.
func (st *State) Place(s *Session, sel Selector) ([]KernelPlacement, []Blocker) {
	if len(s.PerKernel) == 0 {
		return nil, []Blocker{{Kind: BlockGang, Scope: "session:" + string(s.Pending.Session.ID),
			Impossible: true, Detail: "session has no kernels"}}
	}
	group := "group:" + st.Snap.Group.Name
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
	st.Reserve(a, &s.Total)
	st.Cursor = st.Agents[a].ID
	out := make([]KernelPlacement, len(s.PerKernel))
	for k := range s.PerKernel {
		out[k] = KernelPlacement{Kernel: s.Pending.Kernels[k].ID, Agent: st.Agents[a].ID, Slots: s.PerKernel[k].Vec}
	}
	return out, nil
}

// placeGang places each kernel of a multi-node session separately, all or
// nothing: the first kernel that does not fit undoes the ones before it.
func (st *State) placeGang(s *Session, sel Selector) ([]KernelPlacement, []Blocker) {
	cursor := st.Cursor
	chosen := make([]int32, 0, len(s.PerKernel))
	for k := range s.PerKernel {
		req := &s.PerKernel[k]
		a := st.selectIn(s, sel, req)
		if a < 0 {
			scope := fmt.Sprintf("kernel:%d/%d", k+1, len(s.PerKernel))
			blockers := st.capacityBlockers(s.eligible, req, BlockGang, scope)
			for j, b := range chosen {
				st.Unreserve(b, &s.PerKernel[j])
			}
			st.Cursor = cursor
			return nil, blockers
		}
		st.Reserve(a, req)
		st.Cursor = st.Agents[a].ID
		chosen = append(chosen, a)
	}
	out := make([]KernelPlacement, len(chosen))
	for k, a := range chosen {
		out[k] = KernelPlacement{Kernel: s.Pending.Kernels[k].ID, Agent: st.Agents[a].ID, Slots: s.PerKernel[k].Vec}
	}
	return out, nil
}

// selectIn asks the selector tier by tier; -1 when no tier has a fit.
func (st *State) selectIn(s *Session, sel Selector, req *Request) int32 {
	if s.eligible.cached() && st.cannotFit(s.eligible, req) {
		return -1
	}
	for _, tier := range s.tiers {
		if a := sel.Select(st, tier, req); a >= 0 {
			return a
		}
	}
	return -1
}

func (c *candidates) cached() bool { return !c.custom }

// planTiers works out which agents the session may use, in preference
// order: designated agents first (only them when strict), and agents the
// session failed on before last.
func (st *State) planTiers(s *Session, arch string) []Blocker {
	base := st.archCandidates(arch)
	sess := &s.Pending.Session
	if len(sess.DesignatedAgents) == 0 && len(sess.AvoidAgents) == 0 {
		s.tiers = [][]int32{base.idx}
		s.eligible = base
		return nil
	}
	designated := st.indexSet(sess.DesignatedAgents)
	avoid := st.indexSet(sess.AvoidAgents)
	var in, out []int32
	for _, a := range base.idx {
		if designated[a] {
			in = append(in, a)
		} else {
			out = append(out, a)
		}
	}
	var tiers [][]int32
	switch {
	case len(sess.DesignatedAgents) == 0:
		tiers = [][]int32{base.idx}
	case sess.DesignatedStrict:
		if len(in) == 0 {
			return []Blocker{{Kind: BlockNoAgents, Scope: "designated",
				Detail: fmt.Sprint(sess.DesignatedAgents)}}
		}
		tiers = [][]int32{in}
	default:
		tiers = [][]int32{in, out}
	}
	var split [][]int32
	for _, t := range tiers {
		var keep, later []int32
		for _, a := range t {
			if avoid[a] {
				later = append(later, a)
			} else {
				keep = append(keep, a)
			}
		}
		split = append(split, keep, later)
	}
	var all []int32
	s.tiers = s.tiers[:0]
	for _, t := range split {
		if len(t) > 0 {
			s.tiers = append(s.tiers, t)
			all = append(all, t...)
		}
	}
	slices.Sort(all)
	s.eligible = &candidates{idx: all, custom: true}
	return nil
}

func (st *State) indexSet(ids []domain.AgentID) map[int32]bool {
	m := make(map[int32]bool, len(ids))
	for _, id := range ids {
		if i, ok := st.byID[id]; ok {
			m[i] = true
		}
	}
	return m
}

// capacityBlockers explains why req fits on none of c: one blocker per slot
// no candidate has enough of, or one without a slot when every slot is free
// somewhere but never all together.
func (st *State) capacityBlockers(c *candidates, req *Request, kind BlockerKind, scope string) []Blocker {
	st.refresh(c)
	var out []Blocker
	for _, am := range req.Amounts {
		if am.Q > c.maxFree[am.Slot] {
			out = append(out, Blocker{
				Kind: kind, Scope: scope, Slot: st.Snap.Slots.Type(am.Slot).Name,
				Requested: am.Q, Available: max(c.maxFree[am.Slot], 0), Capacity: c.maxCap[am.Slot],
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
	return out
}
