package framework

import (
	"math"
	"slices"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// noCap is the kernel room of an agent without a kernel cap.
const noCap = math.MaxInt32

// agentIndex keeps one candidate set in a Ranker's order as a treap whose
// nodes also hold the most free of each slot, and the most kernel room, in
// their subtree. "The first agent in order that fits" then descends only
// into subtrees whose maxima admit the request: a subtree is skipped only
// when no agent in it can fit, so the answer is the scan's, exactly. A
// reservation changes one agent's free slots and rank; the index moves that
// one node, O(log n) expected.
//
// Nodes are numbered by the agent's position in the candidate list, and
// the fields are parallel slices so an index of 10k agents is a handful of
// allocations, not 10k.
type agentIndex struct {
	st     *State
	ranker Ranker
	name   string // the ranker's, to find the index again
	byIdx  bool   // order by agent index alone (FromCursor)
	root   int32
	agent  []int32 // node → agent
	node   []int32 // agent → node, -1 when the agent is not a candidate
	left   []int32
	right  []int32
	prio   []uint32
	rank   []Rank
	// maxFree is node*N+slot: the most of the slot free in the subtree.
	maxFree []domain.Quantity
	// maxRoom is the most kernels any agent of the subtree can still take.
	maxRoom []int32
	// ans remembers, per request shape, the first agent in order that
	// fits it. A change to one agent can change an answer only through
	// that agent, so update keeps every answer exact in O(1), and a search
	// goes on from where the last one stopped instead of passing the same
	// full agents again: once a group fills up, the first fit for
	// concentrated lies behind thousands of busy agents whose subtree
	// maxima still admit the request.
	ans []answer
	// known lists the shapes with an answer, which update revisits.
	known []int32
}

// answer is what the index knows of one request shape.
type answer struct {
	req *Request // one request of the shape, to test agents against
	// best is the first fit: an agent, -1 for none, unknown while the
	// shape was never asked, stale when it is to be worked out again.
	best int32
	// seen holds every agent that fits and lies at or before upto in the
	// order (anywhere, when all). Agents move as they fill, and those
	// that fit may move ahead of upto; they are kept here rather than
	// pulling upto back, so the next search never passes again the full
	// agents beyond which upto was found.
	seen []int32
	upto bound
	all  bool
}

// maxSeen bounds an answer's seen list; past it, upto moves back to the
// half that comes first. State.maxSeen holds it, so tests can make it
// small enough to reach.
const maxSeen = 32

const (
	unknown = -2
	stale   = -3
)

// maxKnown bounds the answers kept, since update revisits each of them:
// with more distinct shapes than this, the rest are searched every time.
const maxKnown = 256

func newAgentIndex(st *State, idx []int32, r Ranker) *agentIndex {
	m := len(idx)
	ix := &agentIndex{
		st: st, ranker: r, byIdx: r.FromCursor(), root: -1,
		agent:   slices.Clone(idx),
		node:    make([]int32, len(st.Agents)),
		left:    make([]int32, m),
		right:   make([]int32, m),
		prio:    make([]uint32, m),
		rank:    make([]Rank, m),
		maxFree: make([]domain.Quantity, m*st.N),
		maxRoom: make([]int32, m),
	}
	if !ix.byIdx {
		ix.ans = make([]answer, st.shapes)
		for i := range ix.ans {
			ix.ans[i].best = unknown
		}
	}
	for a := range ix.node {
		ix.node[a] = -1
	}
	order := make([]int32, m)
	for n, a := range idx {
		ix.node[a] = int32(n)
		ix.prio[n] = mix(uint32(a))
		if !ix.byIdx {
			ix.rank[n] = r.Rank(st, a)
		}
		order[n] = int32(n)
	}
	slices.SortFunc(order, func(x, y int32) int {
		if ix.less(x, y) {
			return -1
		}
		return 1 // nodes are distinct, so never equal
	})
	// Build the treap from the sorted nodes in one pass: a node pops the
	// lower-priority nodes off the right spine into its left subtree.
	stack := make([]int32, 0, 64)
	for _, n := range order {
		ix.left[n], ix.right[n] = -1, -1
		last := int32(-1)
		for len(stack) > 0 && ix.prio[stack[len(stack)-1]] < ix.prio[n] {
			last = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		ix.left[n] = last
		if len(stack) > 0 {
			ix.right[stack[len(stack)-1]] = n
		}
		stack = append(stack, n)
	}
	if len(stack) > 0 {
		ix.root = stack[0]
		ix.pullAll(ix.root)
	}
	return ix
}

// mix spreads agent indexes into treap priorities; any fixed function
// would keep plans deterministic, since the first fit in a total order
// does not depend on the tree's shape, but a hash keeps the tree balanced.
func mix(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// less orders two nodes: by rank, then by agent index.
func (ix *agentIndex) less(x, y int32) bool {
	if !ix.byIdx {
		rx, ry := ix.rank[x], ix.rank[y]
		if rx.Key != ry.Key {
			return rx.Key < ry.Key
		}
		if rx.Tie != ry.Tie {
			return rx.Tie < ry.Tie
		}
	}
	return ix.agent[x] < ix.agent[y]
}

func (ix *agentIndex) pullAll(n int32) {
	if l := ix.left[n]; l >= 0 {
		ix.pullAll(l)
	}
	if r := ix.right[n]; r >= 0 {
		ix.pullAll(r)
	}
	ix.pull(n)
}

// pull recomputes n's maxima from its agent and its children.
func (ix *agentIndex) pull(n int32) {
	st, N := ix.st, ix.st.N
	a := ix.agent[n]
	dst := ix.maxFree[int(n)*N : int(n)*N+N]
	copy(dst, st.Free[int(a)*N:int(a)*N+N])
	room := int32(noCap)
	if mk := st.maxK[a]; mk > 0 {
		room = mk - st.Kernels[a]
	}
	for _, c := range [2]int32{ix.left[n], ix.right[n]} {
		if c < 0 {
			continue
		}
		for s, q := range ix.maxFree[int(c)*N : int(c)*N+N] {
			dst[s] = max(dst[s], q)
		}
		room = max(room, ix.maxRoom[c])
	}
	ix.maxRoom[n] = room
}

// mayFit reports whether some agent under n could take req.
func (ix *agentIndex) mayFit(n int32, req *Request) bool {
	if req.Kernels > ix.maxRoom[n] {
		return false
	}
	base := int(n) * ix.st.N
	for _, am := range req.Amounts {
		if am.Q > ix.maxFree[base+int(am.Slot)] {
			return false
		}
	}
	return true
}

// bound is a place in the order: the key an agent has or had.
type bound struct {
	on    bool
	rank  Rank
	agent int32
	// past makes first skip the place itself, not only what precedes it.
	past bool
}

// at returns the bound at node n's key.
func (ix *agentIndex) at(n int32) bound {
	return bound{on: true, rank: ix.rank[n], agent: ix.agent[n]}
}

// before reports whether node n comes before b (or is at b, when b.past).
func (ix *agentIndex) before(n int32, b bound) bool {
	if !b.on {
		return false
	}
	if !ix.byIdx {
		r := ix.rank[n]
		if r.Key != b.rank.Key {
			return r.Key < b.rank.Key
		}
		if r.Tie != b.rank.Tie {
			return r.Tie < b.rank.Tie
		}
	}
	return ix.agent[n] < b.agent || b.past && ix.agent[n] == b.agent
}

// after reports whether node n comes after place b.
func (ix *agentIndex) after(n int32, b bound) bool {
	b.past = true
	return !ix.before(n, b)
}

// first returns the first agent in order under n that fits req, is not
// before b and is not in except (sorted); -1 when there is none.
func (ix *agentIndex) first(n int32, req *Request, b bound, except []int32) int32 {
	for n >= 0 && ix.mayFit(n, req) {
		if ix.before(n, b) {
			// So is its left subtree.
			n = ix.right[n]
			continue
		}
		if r := ix.first(ix.left[n], req, b, except); r >= 0 {
			return r
		}
		a := ix.agent[n]
		if ix.st.Fits(a, req) && !contains(except, a) {
			return a
		}
		n, b = ix.right[n], bound{}
	}
	return -1
}

func contains(sorted []int32, a int32) bool {
	_, ok := slices.BinarySearch(sorted, a)
	return ok
}

// selectFirst is the index's answer to Ranker.Select over the whole
// candidate set less except.
func (ix *agentIndex) selectFirst(req *Request, except []int32) int32 {
	if ix.byIdx {
		start := bound{on: true, agent: ix.st.CursorIndex()}
		if a := ix.first(ix.root, req, start, except); a >= 0 {
			return a
		}
		// Nothing fits after the cursor: wrap around to the lowest index.
		return ix.first(ix.root, req, bound{}, except)
	}
	if len(except) > 0 {
		return ix.first(ix.root, req, bound{}, except)
	}
	an := &ix.ans[req.shape]
	switch an.best {
	case unknown:
		if len(ix.known) == maxKnown {
			return ix.first(ix.root, req, bound{}, nil)
		}
		an.req = req
		ix.known = append(ix.known, req.shape)
	case stale:
	default:
		return an.best
	}
	switch {
	case len(an.seen) > 0:
		an.best = an.seen[0]
		for _, a := range an.seen[1:] {
			if ix.less(ix.node[a], ix.node[an.best]) {
				an.best = a
			}
		}
	case an.all:
		an.best = -1
	default:
		from := an.upto
		from.past = true
		a := ix.first(ix.root, req, from, nil)
		if a < 0 {
			an.all, an.best = true, -1
			break
		}
		an.seen = append(an.seen, a)
		an.upto, an.best = ix.at(ix.node[a]), a
	}
	return an.best
}

// update re-ranks agent a and refreshes the maxima above it after its free
// slots or kernels changed, then brings the answers up to date: a enters
// or leaves each answer's seen list as it now fits and lies within upto,
// and the answer is a, or is worked out again from seen, when a overtook
// it or was it.
func (ix *agentIndex) update(a int32) {
	n := ix.node[a]
	if n < 0 {
		return
	}
	var r Rank
	if !ix.byIdx {
		r = ix.ranker.Rank(ix.st, a)
	}
	if r == ix.rank[n] {
		ix.root = ix.touch(ix.root, n)
	} else {
		ix.root = ix.remove(ix.root, n)
		ix.rank[n] = r
		ix.left[n], ix.right[n] = -1, -1
		ix.root = ix.insert(ix.root, n)
	}
	for _, sh := range ix.known {
		an := &ix.ans[sh]
		keep := ix.st.Fits(a, an.req) && (an.all || an.upto.on && !ix.after(n, an.upto))
		i := slices.Index(an.seen, a)
		switch {
		case keep && i < 0:
			an.seen = append(an.seen, a)
			if len(an.seen) > ix.st.maxSeen {
				ix.trim(an)
			}
		case !keep && i >= 0:
			an.seen = slices.Delete(an.seen, i, i+1)
			if an.best == a {
				an.best = stale
			}
			continue
		case !keep:
			continue
		}
		switch {
		case an.best == a:
			an.best = stale
		case an.best == -1 || an.best >= 0 && ix.less(n, ix.node[an.best]):
			an.best = a
		}
	}
}

// trim keeps the first half of an answer's seen list and moves upto back
// to the last of them: every agent that fits up to there is still listed.
func (ix *agentIndex) trim(an *answer) {
	slices.SortFunc(an.seen, func(x, y int32) int {
		if ix.less(ix.node[x], ix.node[y]) {
			return -1
		}
		return 1
	})
	an.seen = an.seen[:max(ix.st.maxSeen/2, 1)]
	an.upto, an.all = ix.at(ix.node[an.seen[len(an.seen)-1]]), false
}

// touch recomputes the maxima on the path from t down to x.
func (ix *agentIndex) touch(t, x int32) int32 {
	if t != x {
		c := ix.toward(t, x)
		*c = ix.touch(*c, x)
	}
	ix.pull(t)
	return t
}

func (ix *agentIndex) remove(t, x int32) int32 {
	if t == x {
		return ix.merge(ix.left[t], ix.right[t])
	}
	c := ix.toward(t, x)
	*c = ix.remove(*c, x)
	ix.pull(t)
	return t
}

// toward is t's link to the subtree x is in or goes into, where touch,
// remove and insert go on. The node arrays never grow, so the pointer
// stays good while the recursion below rewrites other links.
func (ix *agentIndex) toward(t, x int32) *int32 {
	if ix.less(x, t) {
		return &ix.left[t]
	}
	return &ix.right[t]
}

func (ix *agentIndex) insert(t, x int32) int32 {
	if t < 0 {
		ix.pull(x)
		return x
	}
	if ix.prio[x] > ix.prio[t] {
		ix.left[x], ix.right[x] = ix.split(t, x)
		ix.pull(x)
		return x
	}
	c := ix.toward(t, x)
	*c = ix.insert(*c, x)
	ix.pull(t)
	return t
}

// split parts t into the nodes before x and those after it.
func (ix *agentIndex) split(t, x int32) (int32, int32) {
	if t < 0 {
		return -1, -1
	}
	if ix.less(t, x) {
		l, r := ix.split(ix.right[t], x)
		ix.right[t] = l
		ix.pull(t)
		return t, r
	}
	l, r := ix.split(ix.left[t], x)
	ix.left[t] = r
	ix.pull(t)
	return l, t
}

// merge joins two treaps where every node of a comes before every node of b.
func (ix *agentIndex) merge(a, b int32) int32 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	case ix.prio[a] > ix.prio[b]:
		ix.right[a] = ix.merge(ix.right[a], b)
		ix.pull(a)
		return a
	default:
		ix.left[b] = ix.merge(a, ix.left[b])
		ix.pull(b)
		return b
	}
}

// maxima writes the most of each slot free, and the most kernel room, on
// any candidate, as candidates.refresh would by a scan.
func (ix *agentIndex) maxima(free domain.Vec) (room int32) {
	if ix.root < 0 {
		for s := range free {
			free[s] = 0
		}
		return 0
	}
	N := ix.st.N
	for s, q := range ix.maxFree[int(ix.root)*N : int(ix.root)*N+N] {
		free[s] = max(q, 0)
	}
	return ix.maxRoom[ix.root]
}
