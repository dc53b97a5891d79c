package framework

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Preemptor chooses, for a waiting session that cannot be placed, running
// sessions of strictly lower priority to evict, under the group's
// preemption policy. It reads the snapshot's holdings and preemption
// records only, so the same snapshot gives the same victims.
//
// The guards against the preemption loops Kueue and Volcano users report:
// a victim must have run MinRuntime; at most Budget preemptions per
// Window; A may not preempt B if B preempted A within the Window; and a
// preemptor whose victims still hold their slots waits for them instead of
// choosing more, holding the free slots it counted on so that nothing
// behind it takes them meanwhile.
type Preemptor struct {
	st     *State
	policy domain.Preemption
	now    time.Time
	// budget is what is left of the window's budget; -1 for no cap.
	budget int
	cands  []victim
	taken  map[domain.SessionID]bool
	// evicting lists, per preemptor, its victims that still hold slots.
	evicting map[domain.SessionID][]int
	// preempted holds (victim, preemptor) of the window's preemptions.
	preempted map[[2]domain.SessionID]bool
	// onAgent lists the candidates with a kernel on each agent; lowest is
	// the lowest priority of any, below which nobody can preempt.
	onAgent map[int32][]int
	lowest  int
	// left counts the candidates that may still be victims this round.
	left int
	// misses remembers, per request shape and candidate agents, the
	// highest priority that found no victims: candidates are only taken
	// and free slots only shrink in a round (until a give-back, which
	// st.given counts), so a session of that shape at or below it finds
	// none either.
	misses map[missKey]miss
	// fit's buffers: one for a single-node session on one agent; work,
	// kern and pos (agent → position in work, -1 between calls) for the
	// rest; chosen is its answer, the caller's until the next call.
	one, work, kern []int64
	pos             []int32
	chosen          []int32
}

type missKey struct {
	shape int32
	elig  *candidates
}

type miss struct {
	priority int
	given    uint64
}

// victim is one session holding slots, as victim selection sees it.
type victim struct {
	id       domain.SessionID
	priority int
	workLost time.Duration
	// ok: RUNNING, preemptible and past the minimum run time.
	ok      bool
	kernels []victimKernel
}

type victimKernel struct {
	agent int32
	slots domain.Vec
}

// NewPreemptor returns the round's victim chooser for the snapshot's group.
func NewPreemptor(st *State) *Preemptor {
	snap := st.Snap
	p := &Preemptor{st: st, policy: snap.Group.Preemption, now: snap.Now, budget: -1,
		taken: map[domain.SessionID]bool{}, evicting: map[domain.SessionID][]int{},
		preempted: map[[2]domain.SessionID]bool{}, onAgent: map[int32][]int{}, misses: map[missKey]miss{}}
	if p.policy.Window > 0 {
		since := p.now.Add(-p.policy.Window)
		used := 0
		for _, r := range snap.Preemptions {
			if r.At.Before(since) {
				continue
			}
			used++
			p.preempted[[2]domain.SessionID{r.Victim, r.Preemptor}] = true
		}
		if p.policy.Budget > 0 {
			p.budget = max(0, p.policy.Budget-used)
		}
	}
	at := map[domain.SessionID]int{}
	for _, h := range snap.Holdings {
		a, ok := st.byID[h.Agent]
		if !ok {
			continue
		}
		i, seen := at[h.Session]
		if !seen {
			i = len(p.cands)
			at[h.Session] = i
			v := victim{id: h.Session, priority: h.Priority}
			if h.Status == domain.SessionRunning && !h.Started.IsZero() {
				v.workLost = max(0, p.now.Sub(h.Started))
				v.ok = h.Preemptible && v.workLost >= p.policy.MinRuntime
			}
			p.cands = append(p.cands, v)
			if h.PreemptedBy != "" && h.Status == domain.SessionTerminating {
				p.evicting[h.PreemptedBy] = append(p.evicting[h.PreemptedBy], i)
			}
		}
		c := &p.cands[i]
		if len(c.kernels) == 0 || c.kernels[len(c.kernels)-1].agent != a {
			p.onAgent[a] = append(p.onAgent[a], i)
		}
		c.kernels = append(c.kernels, victimKernel{agent: a, slots: padded(h.Slots, st.N)})
	}
	for k, c := range p.cands {
		if k == 0 || c.priority < p.lowest {
			p.lowest = c.priority
		}
		if c.ok {
			p.left++
		}
	}
	return p
}

// Preempt chooses victims for s, which could not be placed for capacity.
// It returns the preemptions to make and a blocker for s; ok is false
// when s may not preempt or no set of victims would make room for it.
// Victims are chosen to minimise, in order, their count, the highest
// priority among them and the work they lose; ties go to the lower agent
// index and session id.
func (p *Preemptor) Preempt(s *Session) (out []Preemption, b Blocker, ok bool) {
	id := s.Pending.Session.ID
	if idx := p.evicting[id]; len(idx) > 0 {
		// Its victims are still ending: wait for them rather than evict
		// more, and keep what is free for it now.
		p.hold(s, idx)
		return nil, p.blocker(idx), true
	}
	if p.budget == 0 || s.eligible == nil || len(s.eligible.idx) == 0 {
		return nil, Blocker{}, false
	}
	prio := s.Pending.Session.Priority
	if p.left == 0 || prio <= p.lowest {
		return nil, Blocker{}, false
	}
	key := missKey{shape: s.Total.shape, elig: s.eligible}
	if m, ok := p.misses[key]; ok && m.given == p.st.given && prio <= m.priority {
		return nil, Blocker{}, false
	}
	// excluded: the no-cycle rule kept a candidate from s alone, so its
	// miss says nothing of other sessions.
	excluded := false
	may := func(from []int) []int {
		var pool []int
		var seen map[int]bool // a gang's victim may be on several agents
		if s.MultiNode {
			seen = map[int]bool{}
		}
		for _, i := range from {
			v := &p.cands[i]
			if v.ok && v.priority < prio && p.preempted[[2]domain.SessionID{id, v.id}] {
				excluded = true
			}
			if v.ok && v.priority < prio && !p.taken[v.id] && !p.preempted[[2]domain.SessionID{id, v.id}] && !seen[i] {
				if seen != nil {
					seen[i] = true
				}
				pool = append(pool, i)
			}
		}
		slices.SortFunc(pool, func(x, y int) int { return p.cost(x, y) })
		return pool
	}
	var best []int
	if s.MultiNode {
		var all []int
		for _, a := range s.eligible.idx {
			all = append(all, p.onAgent[a]...)
		}
		if pool := may(all); len(pool) > 0 {
			best = p.choose(s, pool, s.eligible.idx)
		}
	} else {
		for _, a := range s.eligible.idx {
			here := may(p.onAgent[a])
			if len(here) == 0 {
				continue
			}
			if set := p.choose(s, here, []int32{a}); set != nil && (best == nil || p.better(set, best)) {
				best = set
			}
		}
	}
	if best == nil && !excluded {
		p.misses[key] = miss{priority: prio, given: p.st.given}
	}
	if best == nil || p.budget >= 0 && len(best) > p.budget {
		return nil, Blocker{}, false
	}
	if p.budget > 0 {
		p.budget -= len(best)
	}
	slices.Sort(best)
	for _, i := range best {
		v := &p.cands[i]
		p.taken[v.id] = true
		p.left--
		out = append(out, Preemption{Victim: v.id, Preemptor: id, Reason: domain.PreemptedReason(id),
			Priority: v.priority, WorkLost: v.workLost})
	}
	p.evicting[id] = best
	p.hold(s, best)
	return out, p.blocker(best), true
}

// cost orders candidates cheapest first: lower priority, less work lost,
// then id.
func (p *Preemptor) cost(x, y int) int {
	a, b := &p.cands[x], &p.cands[y]
	if c := cmp.Compare(a.priority, b.priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.workLost, b.workLost); c != 0 {
		return c
	}
	return strings.Compare(string(a.id), string(b.id))
}

// better reports whether victim set x beats y: fewer victims, then a
// lower highest priority, then less work lost.
func (p *Preemptor) better(x, y []int) bool {
	key := func(set []int) (int, int, time.Duration) {
		top, lost := 0, time.Duration(0)
		for k, i := range set {
			if k == 0 || p.cands[i].priority > top {
				top = p.cands[i].priority
			}
			lost += p.cands[i].workLost
		}
		return len(set), top, lost
	}
	xn, xp, xl := key(x)
	yn, yp, yl := key(y)
	if xn != yn {
		return xn < yn
	}
	if xp != yp {
		return xp < yp
	}
	return xl < yl
}

func (p *Preemptor) on(i int, a int32) bool {
	for _, k := range p.cands[i].kernels {
		if k.agent == a {
			return true
		}
	}
	return false
}

// choose returns the cheapest single candidate of pool that makes room
// for s on agents alone; failing that, it takes candidates cheapest first
// until s fits with their slots given back, then drops those it turns out
// not to need, latest taken first. Beyond one victim the count is so
// minimised greedily, not exactly. It returns nil when even the whole
// pool is not enough.
func (p *Preemptor) choose(s *Session, pool []int, agents []int32) []int {
	// One victim is the fewest there can be: the cheapest that is enough
	// alone wins before any pair, however cheap the pair.
	for _, i := range pool {
		if _, ok := p.fit(s, []int{i}, agents); ok {
			return []int{i}
		}
	}
	var set []int
	for _, i := range pool {
		set = append(set, i)
		if _, ok := p.fit(s, set, agents); ok {
			break
		}
	}
	if _, ok := p.fit(s, set, agents); !ok {
		return nil
	}
	for k := len(set) - 1; k >= 0 && len(set) > 1; k-- {
		without := append(append(make([]int, 0, len(set)-1), set[:k]...), set[k+1:]...)
		if _, ok := p.fit(s, without, agents); ok {
			set = without
		}
	}
	return set
}

// fit places s's kernels first fit over agents, with what the victims in
// set hold there given back, and reports which agent each kernel got.
func (p *Preemptor) fit(s *Session, set []int, agents []int32) ([]int32, bool) {
	st := p.st
	n := st.N
	if !s.MultiNode && len(agents) == 1 {
		// The common case, without allocating: one request on one agent.
		a := agents[0]
		if cap(p.one) < n {
			p.one = make([]int64, n)
		}
		work := p.one[:n]
		for sl := range n {
			work[sl] = int64(st.Free[int(a)*n+sl])
		}
		kern := int64(st.Kernels[a])
		for _, i := range set {
			for _, k := range p.cands[i].kernels {
				if k.agent == a {
					for sl, q := range k.slots {
						work[sl] += int64(q)
					}
					kern--
				}
			}
		}
		if !p.fits(work, kern, a, &s.Total) {
			return nil, false
		}
		p.chosen = append(p.chosen[:0], a)
		return p.chosen, true
	}
	if len(p.pos) != len(st.Agents) {
		p.pos = make([]int32, len(st.Agents))
		for i := range p.pos {
			p.pos[i] = -1
		}
	}
	pos := p.pos
	defer func() {
		for _, a := range agents {
			pos[a] = -1
		}
	}()
	p.work = slices.Grow(p.work[:0], len(agents)*n)[:len(agents)*n]
	p.kern = slices.Grow(p.kern[:0], len(agents))[:len(agents)]
	work, kern := p.work, p.kern
	for j, a := range agents {
		pos[a] = int32(j)
		for sl := range n {
			work[j*n+sl] = int64(st.Free[int(a)*n+sl])
		}
		kern[j] = int64(st.Kernels[a])
	}
	for _, i := range set {
		for _, k := range p.cands[i].kernels {
			if j := int(pos[k.agent]); j >= 0 {
				for sl, q := range k.slots {
					work[j*n+sl] += int64(q)
				}
				kern[j]--
			}
		}
	}
	reqs := s.PerKernel
	if !s.MultiNode {
		reqs = []Request{s.Total}
	}
	chosen := slices.Grow(p.chosen[:0], len(reqs))[:len(reqs)]
	p.chosen = chosen
	for r := range reqs {
		req := &reqs[r]
		chosen[r] = -1
		for j, a := range agents {
			if p.fits(work[j*n:(j+1)*n], kern[j], a, req) {
				for _, am := range req.Amounts {
					work[j*n+int(am.Slot)] -= int64(am.Q)
				}
				kern[j] += int64(req.Kernels)
				chosen[r] = a
				break
			}
		}
		if chosen[r] < 0 {
			return nil, false
		}
	}
	return chosen, true
}

func (p *Preemptor) fits(free []int64, kernels int64, a int32, req *Request) bool {
	return p.st.fitsWork(free, kernels, a, req)
}

// hold takes out of the round the free slots s counts on besides its
// victims', on the agents it would start on, so no session behind it takes
// them before its victims are gone.
func (p *Preemptor) hold(s *Session, set []int) {
	st := p.st
	agents := s.eligible.idx
	if !s.MultiNode {
		// A single-node preemptor's victims were chosen on one agent.
		for _, a := range agents {
			if !slices.ContainsFunc(set, func(i int) bool { return !p.on(i, a) }) {
				agents = []int32{a}
				break
			}
		}
	}
	chosen, ok := p.fit(s, set, agents)
	if !ok {
		return
	}
	reqs := s.PerKernel
	if !s.MultiNode {
		reqs = []Request{s.Total}
	}
	need := map[int32]domain.Vec{}
	var order []int32
	for r, a := range chosen {
		v := need[a]
		if v == nil {
			v = make(domain.Vec, st.N)
			order = append(order, a)
		}
		for _, am := range reqs[r].Amounts {
			v[am.Slot] += am.Q
		}
		need[a] = v
	}
	for _, a := range order {
		req := Request{Vec: need[a]}
		for sl, q := range need[a] {
			q = min(q, st.Free[int(a)*st.N+sl])
			if q > 0 {
				req.Amounts = append(req.Amounts, Amount{Slot: domain.SlotID(sl), Q: q})
			}
		}
		st.Reserve(a, &req)
	}
}

func (p *Preemptor) blocker(set []int) Blocker {
	ids := make([]string, len(set))
	for k, i := range set {
		ids[k] = string(p.cands[i].id)
	}
	slices.Sort(ids)
	return Blocker{Kind: BlockPreempting, Scope: strings.Join(ids, ", ")}
}
