package framework

import (
	"slices"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Backfill is a round's reservations under head-of-line reserve, after
// SLURM's backfill: a session that cannot be placed reserves the slots it
// will need from its shadow time, the earliest time the expected ends of
// running sessions free them; a later session may then take slots only
// where it cannot delay any reservation's start. Everything is worked out
// from the snapshot's holdings and the round's own placements, so the same
// snapshot gives the same reservations.
//
// The model is SLURM's: a session ends by its time limit (one without a
// limit never ends), and slots only come back between now and a shadow
// time, so a session that fits now fits at every time until then.
type Backfill struct {
	st    *State
	depth int
	// releases are slots agents get back, sorted by time then agent when
	// sorted is set; placements of the round append to them.
	releases []release
	sorted   bool
	res      []reservation
	// on says which reservations the holds in force stand for, holds what
	// they took from which agent, and first the first reservation that
	// took anything, which a blocker names.
	on     []bool
	want   []bool
	holds  []hold
	first  *reservation
	misses map[*candidates]int
	// firstBlocker names first; out is Place's blockers, reused.
	firstBlocker Blocker
	out          []Blocker
}

// release is what one kernel gives back to one agent at a time.
type release struct {
	at      time.Time
	agent   int32
	slots   domain.Vec
	kernels int32
}

type reservation struct {
	plan Reservation
	need []agentNeed // agent order
}

// agentNeed is what a reservation takes of one agent, and what a session
// that would still run at the shadow time must leave of the agent's free
// slots now so that the reservation can start then: the reservation's
// need plus the needs of earlier reservations on the agent, less what is
// released there by the shadow time. It is negative where more comes
// back than is needed.
type agentNeed struct {
	agent   int32
	slots   []int64
	kernels int64
	hold    []int64
	holdK   int64
}

// NewBackfill returns the round's reservation book, holding at most depth
// reservations.
func NewBackfill(st *State, depth int) *Backfill {
	b := &Backfill{st: st, depth: depth, misses: make(map[*candidates]int)}
	now := st.Snap.Now
	for _, h := range st.Snap.Holdings {
		a, ok := st.byID[h.Agent]
		if !ok || h.Ends.IsZero() {
			continue
		}
		at := h.Ends
		if at.Before(now) {
			// Overdue: the time limit pass is about to end it.
			at = now
		}
		b.releases = append(b.releases, release{at: at, agent: a, slots: padded(h.Slots, st.N), kernels: 1})
	}
	return b
}

// Full reports whether no more reservations may be made this round.
func (b *Backfill) Full() bool { return len(b.res) >= b.depth }

// Held reports whether any reservation is held.
func (b *Backfill) Held() bool { return len(b.res) > 0 }

// Reservations returns the round's reservations for the plan.
func (b *Backfill) Reservations() []Reservation {
	out := make([]Reservation, len(b.res))
	for i := range b.res {
		out[i] = b.res[i].plan
	}
	return out
}

// Track records a placement of the round: it frees its slots at its time
// limit, and every reservation held counts it as backfilled. It reports
// whether the placement was a backfill.
func (b *Backfill) Track(s *Session, kernels []KernelPlacement) bool {
	if limit := s.Pending.Session.TimeLimit; limit > 0 {
		at := b.st.Snap.Now.Add(limit)
		for _, k := range kernels {
			a, ok := b.st.byID[k.Agent]
			if !ok {
				continue
			}
			slots := k.Slots
			if len(slots) != b.st.N {
				slots = padded(slots, b.st.N)
			}
			// Placements' vectors are the round's and never written again.
			b.releases = append(b.releases, release{at: at, agent: a, slots: slots, kernels: 1})
		}
		b.sorted = false
	}
	for i := range b.res {
		b.res[i].plan.Backfilled++
	}
	return len(b.res) > 0
}

// Reserve works out the shadow time of a session that could not be placed
// and reserves its slots from then. It reports false when no such time
// exists: the session needs slots that sessions without a time limit hold.
// Agents are chosen first fit in agent order among the session's eligible
// agents, which keeps the choice deterministic and independent of the
// selector's view of load, which by then will have changed.
func (b *Backfill) Reserve(s *Session) (Reservation, bool) {
	if s.eligible == nil || len(s.eligible.idx) == 0 || b.Full() {
		return Reservation{}, false
	}
	// The shadow time is worked out on the agents as they are, and the
	// holds change with the new reservation anyway.
	b.lift()
	b.sortReleases()
	w := b.newShadow(s)
	at, found := w.earliest(b.releases)
	if !found {
		return Reservation{}, false
	}
	res := w.reservation(at)
	b.res = append(b.res, res)
	return res.plan, true
}

// sortReleases orders the releases by time, then agent, once per round.
func (b *Backfill) sortReleases() {
	if b.sorted {
		return
	}
	slices.SortStableFunc(b.releases, func(x, y release) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		return int(x.agent) - int(y.agent)
	})
	b.sorted = true
}

// shadow is the search for one session's shadow time: the free slots
// and kernels of its eligible agents, in elig order, as the releases
// come in.
type shadow struct {
	b    *Backfill
	s    *Session
	elig []int32
	pos  map[int32]int // agent index to its position in elig
	n    int           // slots per agent
	// work and workK are each eligible agent's free slots and kernels
	// at the time under test, less earlier reservations.
	work, workK []int64
	// scratch and scratchK are work and workK as a multi-node fit
	// takes from them.
	scratch, scratchK []int64
	chosen            []int32 // the agent of each kernel of the last fit
	// touched are the positions in elig whose agents the last group of
	// releases gave slots back to. A single-node session that fitted no
	// agent before can only fit one of those now: the rest are unchanged.
	touched []int
}

func (b *Backfill) newShadow(s *Session) *shadow {
	st := b.st
	elig := s.eligible.idx
	n := st.N
	w := &shadow{b: b, s: s, elig: elig, pos: make(map[int32]int, len(elig)), n: n,
		work: make([]int64, len(elig)*n), workK: make([]int64, len(elig)),
		chosen: make([]int32, len(s.PerKernel))}
	for i, a := range elig {
		w.pos[a] = i
		for sl := range n {
			w.work[i*n+sl] = int64(st.Free[int(a)*n+sl])
		}
		w.workK[i] = int64(st.Kernels[a])
	}
	// Earlier reservations hold their slots from their own start; taking
	// them away from now on is the conservative reading, and keeps every
	// earlier reservation whole whatever this one's time.
	for _, r := range b.res {
		for _, nd := range r.need {
			if i, ok := w.pos[nd.agent]; ok {
				for sl := range n {
					w.work[i*n+sl] -= nd.slots[sl]
				}
				w.workK[i] += nd.kernels
			}
		}
	}
	w.scratch = make([]int64, len(w.work))
	w.scratchK = make([]int64, len(w.workK))
	return w
}

// earliest is the first time, now or a release's, at which the session
// fits, adding each group of same-time releases in turn.
func (w *shadow) earliest(releases []release) (time.Time, bool) {
	n := w.n
	at := w.b.st.Snap.Now
	found := w.fit(true)
	for i := 0; !found && i < len(releases); {
		at = releases[i].at
		w.touched = w.touched[:0]
		for ; i < len(releases) && releases[i].at.Equal(at); i++ {
			r := &releases[i]
			j, ok := w.pos[r.agent]
			if !ok {
				continue
			}
			w.touched = append(w.touched, j)
			for sl := range n {
				w.work[j*n+sl] += int64(r.slots[sl])
			}
			w.workK[j] -= int64(r.kernels)
		}
		if len(w.touched) > 0 {
			slices.Sort(w.touched)
			w.touched = slices.Compact(w.touched)
			found = w.fit(false)
		}
	}
	return at, found
}

// fit reports whether the session fits work, setting chosen; all tries
// every agent of a single-node session, else only the touched ones.
func (w *shadow) fit(all bool) bool {
	if w.s.MultiNode {
		return w.fitMulti()
	}
	if all {
		for i := range w.elig {
			if w.fitOn(i) {
				return true
			}
		}
		return false
	}
	for _, i := range w.touched {
		if w.fitOn(i) {
			return true
		}
	}
	return false
}

// fitOn reports whether the whole single-node session fits the agent at
// position i.
func (w *shadow) fitOn(i int) bool {
	n := w.n
	if !w.b.fits(w.work[i*n:(i+1)*n], w.workK[i], w.elig[i], &w.s.Total) {
		return false
	}
	for k := range w.chosen {
		w.chosen[k] = w.elig[i]
	}
	return true
}

// fitMulti places the kernels one by one, each on the first agent that
// still has room.
func (w *shadow) fitMulti() bool {
	n := w.n
	copy(w.scratch, w.work)
	copy(w.scratchK, w.workK)
	for k := range w.s.PerKernel {
		req := &w.s.PerKernel[k]
		w.chosen[k] = -1
		for i, a := range w.elig {
			if w.b.fits(w.scratch[i*n:(i+1)*n], w.scratchK[i], a, req) {
				for _, am := range req.Amounts {
					w.scratch[i*n+int(am.Slot)] -= int64(am.Q)
				}
				w.scratchK[i]++
				w.chosen[k] = a
				break
			}
		}
		if w.chosen[k] < 0 {
			return false
		}
	}
	return true
}

// reservation is the session's reservation at time at, with each agent's
// need and hold, from the last fit.
func (w *shadow) reservation(at time.Time) reservation {
	st, n := w.b.st, w.n
	res := reservation{plan: Reservation{Session: w.s.Pending.Session.ID, Start: at}}
	for k, a := range w.chosen {
		req := &w.s.PerKernel[k]
		var nd *agentNeed
		for j := range res.need {
			if res.need[j].agent == a {
				nd = &res.need[j]
			}
		}
		if nd == nil {
			res.need = append(res.need, agentNeed{agent: a, slots: make([]int64, n)})
			nd = &res.need[len(res.need)-1]
		}
		for _, am := range req.Amounts {
			nd.slots[am.Slot] += int64(am.Q)
		}
		nd.kernels++
	}
	slices.SortFunc(res.need, func(x, y agentNeed) int { return int(x.agent) - int(y.agent) })
	for j := range res.need {
		nd := &res.need[j]
		i := w.pos[nd.agent]
		// work is the agent's free slots at the shadow time less earlier
		// reservations; what a long session may take now is that less this
		// need, so it must leave the rest of today's free slots alone.
		nd.hold = make([]int64, n)
		slots := make(domain.Vec, n)
		for sl := range n {
			nd.hold[sl] = int64(st.Free[int(nd.agent)*n+sl]) - (w.work[i*n+sl] - nd.slots[sl])
			slots[sl] = domain.Quantity(nd.slots[sl])
		}
		nd.holdK = w.workK[i] + nd.kernels - int64(st.Kernels[nd.agent])
		res.plan.Agents = append(res.plan.Agents, ReservedSlots{Agent: st.Agents[nd.agent].ID, Slots: slots,
			Kernels: int32(nd.kernels)})
	}
	return res
}

// fits is Fits over a working copy of one agent's free slots and kernels.
func (b *Backfill) fits(free []int64, kernels int64, a int32, req *Request) bool {
	return b.st.fitsWork(free, kernels, a, req)
}

// Place places s as State.Place does, but keeps it off the slots of every
// reservation it could delay: one whose start comes before the session's
// time limit would end it (any, for a session without a limit). Those
// slots are taken out of the round while such sessions are placed, so the
// selector picks among what the session may use. The holds stay in place
// from one session to the next while the set of reservations they stand
// for is the same — most sessions run past every shadow time or none —
// because every change re-ranks the held agents in the round's indexes.
// A session that fails while slots are held gets a blocker naming the
// first reservation holding any.
func (b *Backfill) Place(s *Session, sel Selector) ([]KernelPlacement, []Blocker) {
	limit := s.Pending.Session.TimeLimit
	ends := b.st.Snap.Now.Add(limit)
	b.want = b.want[:0]
	for i := range b.res {
		b.want = append(b.want, limit <= 0 || ends.After(b.res[i].plan.Start))
	}
	if !slices.Equal(b.want, b.on) {
		b.lift()
		b.apply(b.want)
	}
	kernels, blockers := b.st.Place(s, sel)
	if blockers == nil || b.first == nil {
		return kernels, blockers
	}
	// Like Place's own, the blockers are the caller's to copy before the
	// next call.
	b.out = append(b.out[:0], blockers...)
	for i := range b.out {
		b.out[i].Held = b.held(b.out[i])
	}
	b.out = append(b.out, b.firstBlocker)
	return nil, b.out
}

// held is the most of a capacity blocker's slot the holds take out of one
// agent, so the blocker can say why an agent with that much free did not
// take the session.
func (b *Backfill) held(bl Blocker) domain.Quantity {
	if bl.Kind != BlockCapacity && bl.Kind != BlockGang || bl.Slot == "" || bl.Slot == MembersSlot {
		return 0
	}
	var most domain.Quantity
	if bl.Slot == KernelsSlot {
		for _, h := range b.holds {
			most = max(most, domain.Quantity(h.req.Kernels))
		}
		return most
	}
	id, ok := b.st.Snap.Slots.Lookup(bl.Slot)
	if !ok {
		return 0
	}
	for _, h := range b.holds {
		most = max(most, h.req.Vec[id])
	}
	return most
}

// hold is what is taken out of one agent for the reservations held.
type hold struct {
	agent int32
	req   Request
}

// apply takes out of the round, for the reservations in want, what a
// session still running at their start must leave: on each agent the most
// any of them holds there, never more than is free.
func (b *Backfill) apply(want []bool) {
	st := b.st
	b.on = append(b.on[:0], want...)
	b.holds = b.holds[:0]
	b.first = nil
	for ri := range b.res {
		if !want[ri] {
			continue
		}
		r := &b.res[ri]
		for _, nd := range r.need {
			var h *hold
			for j := range b.holds {
				if b.holds[j].agent == nd.agent {
					h = &b.holds[j]
				}
			}
			if h == nil {
				b.holds = append(b.holds, hold{agent: nd.agent, req: Request{Vec: make(domain.Vec, st.N)}})
				h = &b.holds[len(b.holds)-1]
			}
			base := int(nd.agent) * st.N
			for sl, q := range nd.hold {
				q = min(q, int64(st.Free[base+sl]))
				if q > 0 && b.first == nil {
					b.first = r
				}
				h.req.Vec[sl] = max(h.req.Vec[sl], domain.Quantity(q))
			}
			if mk := st.maxK[nd.agent]; mk > 0 {
				k := min(nd.holdK, int64(mk-st.Kernels[nd.agent]))
				if k > 0 && b.first == nil {
					b.first = r
				}
				h.req.Kernels = max(h.req.Kernels, int32(k))
			}
		}
	}
	if b.first == nil {
		// Whatever such a session takes now comes back in time.
		b.holds = b.holds[:0]
		return
	}
	slices.SortFunc(b.holds, func(x, y hold) int { return int(x.agent) - int(y.agent) })
	b.firstBlocker = Blocker{Kind: BlockReservation, Scope: "session:" + string(b.first.plan.Session),
		Detail: b.first.plan.Start.UTC().Format(time.RFC3339)}
	clear(b.misses)
	for _, c := range st.byArch {
		if c.missGen == st.given {
			b.misses[c] = len(c.misses)
		}
	}
	for i := range b.holds {
		h := &b.holds[i]
		for sl, q := range h.req.Vec {
			if q > 0 {
				h.req.Amounts = append(h.req.Amounts, Amount{Slot: domain.SlotID(sl), Q: q})
			}
		}
		st.Reserve(h.agent, &h.req)
	}
}

// lift gives back what apply took. Placements made meanwhile came out of
// what was left, so the agents keep them. Requests found to fit nowhere
// while slots were held may fit now: those misses are dropped, and the
// ones from before stay true.
func (b *Backfill) lift() {
	st := b.st
	if len(b.holds) > 0 {
		for i := range b.holds {
			st.unreserve(b.holds[i].agent, &b.holds[i].req)
		}
		for _, c := range st.byArch {
			if c.missGen != st.given {
				continue
			}
			if n, ok := b.misses[c]; ok {
				c.misses = c.misses[:n]
			} else {
				c.misses = c.misses[:0]
			}
		}
	}
	b.holds, b.on, b.first = b.holds[:0], b.on[:0], nil
}

// Finish gives back every hold, leaving the round's state as its
// placements alone made it.
func (b *Backfill) Finish() { b.lift() }

// Scope is a reservation's agents as a blocker's scope.
func (r Reservation) Scope() string {
	ids := make([]string, len(r.Agents))
	for i, a := range r.Agents {
		ids[i] = string(a.Agent)
	}
	return strings.Join(ids, ", ")
}
