package selector

import "github.com/sokovan-go/sokovan/internal/scheduler/framework"

// Concentrated packs: the most utilised agent that fits, then the smaller
// one, then the lower id. It keeps whole agents free for large sessions.
type Concentrated struct{}

func (Concentrated) Name() string { return "concentrated" }

func (Concentrated) Select(st *framework.State, candidates []int32, req *framework.Request) int32 {
	best := int32(-1)
	for _, a := range candidates {
		if !st.Fits(a, req) {
			continue
		}
		// Candidates come in id order, so keeping the first of equals
		// breaks the last tie on id.
		if best < 0 || st.Util[a] > st.Util[best] ||
			st.Util[a] == st.Util[best] && st.CapKey[a] < st.CapKey[best] {
			best = a
		}
	}
	return best
}

// Rank puts the most utilised first, then the smaller: Select's order.
func (Concentrated) Rank(st *framework.State, a int32) framework.Rank {
	return framework.Rank{Key: -st.Util[a], Tie: st.CapKey[a]}
}

func (Concentrated) FromCursor() bool { return false }

// Dispersed spreads: the least utilised agent that fits, then the larger
// one, then the lower id. It limits what one agent's loss takes down.
type Dispersed struct{}

func (Dispersed) Name() string { return "dispersed" }

func (Dispersed) Select(st *framework.State, candidates []int32, req *framework.Request) int32 {
	best := int32(-1)
	for _, a := range candidates {
		if !st.Fits(a, req) {
			continue
		}
		if best < 0 || st.Util[a] < st.Util[best] ||
			st.Util[a] == st.Util[best] && st.CapKey[a] > st.CapKey[best] {
			best = a
		}
	}
	return best
}

// Rank puts the least utilised first, then the larger: Select's order.
func (Dispersed) Rank(st *framework.State, a int32) framework.Rank {
	return framework.Rank{Key: st.Util[a], Tie: -st.CapKey[a]}
}

func (Dispersed) FromCursor() bool { return false }

// RoundRobin takes the first agent that fits after the group's cursor, in
// id order, wrapping around. The cursor is kept across rounds in the plan.
type RoundRobin struct{}

func (RoundRobin) Name() string { return "round-robin" }

func (RoundRobin) Select(st *framework.State, candidates []int32, req *framework.Request) int32 {
	start := st.CursorIndex()
	// Candidates are sorted by index; find the first at or after start.
	lo, hi := 0, len(candidates)
	for lo < hi {
		mid := (lo + hi) / 2
		if candidates[mid] < start {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for i := range candidates {
		a := candidates[(lo+i)%len(candidates)]
		if st.Fits(a, req) {
			return a
		}
	}
	return -1
}

// Rank is the same for every agent: round-robin orders by index alone.
func (RoundRobin) Rank(*framework.State, int32) framework.Rank { return framework.Rank{} }

func (RoundRobin) FromCursor() bool { return true }
