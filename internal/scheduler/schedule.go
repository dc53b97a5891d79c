package scheduler

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// Scheduler runs rounds with the plugins of a registry.
type Scheduler struct {
	reg *Registry
}

// New returns a scheduler over reg.
func New(reg *Registry) *Scheduler { return &Scheduler{reg: reg} }

// Schedule decides one round for the snapshot's resource group. It never
// mutates the snapshot. The error is only for a configuration it cannot
// run (unknown plugin, missing slot registry); every session outcome is in
// the plan.
func (s *Scheduler) Schedule(snap *framework.Snapshot) (framework.Plan, error) {
	if snap.Slots == nil {
		return framework.Plan{}, errors.New("snapshot has no slot registry")
	}
	seq, err := s.reg.sequencer(snap.Group.Sequencer)
	if err != nil {
		return framework.Plan{}, err
	}
	sel, err := s.reg.selector(snap.Group.Selector)
	if err != nil {
		return framework.Plan{}, err
	}
	st := framework.NewState(snap)
	plan := framework.Plan{Group: snap.Group.Name, Cursor: snap.Cursor}
	r := round{st: st, plan: &plan, validators: s.reg.validators, sel: sel,
		block: snap.Group.HeadOfLine == domain.HOLBlock, gangs: gangs(st)}
	if snap.Group.HeadOfLine == domain.HOLReserve && snap.Group.ReservationDepth > 0 {
		r.backfill = framework.NewBackfill(st, snap.Group.ReservationDepth)
	}
	if snap.Group.Preemption.Enabled {
		r.preemptor = framework.NewPreemptor(st)
	}
	for _, band := range bands(st) {
		q := seq.Queue(st, band)
		for i, ok := q.Next(); ok; i, ok = q.Next() {
			plan.Tried = append(plan.Tried, st.Sessions[i].Pending.Session.ID)
			if r.try(&st.Sessions[i]) {
				q.Placed(i)
			}
		}
	}
	plan.Cursor = st.Cursor
	if r.backfill != nil {
		r.finishReservations()
	}
	return plan, nil
}

type round struct {
	st         *framework.State
	plan       *framework.Plan
	validators []framework.Validator
	sel        framework.Selector
	block      bool
	// blockedBy is the session that stopped the round under HOL block.
	blockedBy domain.SessionID
	// backfill holds the reservations under HOL reserve; nil otherwise.
	backfill *framework.Backfill
	// reservedAt locates each reservation's blocker in plan.Waiting, to
	// fill in its backfill count once the round is over.
	reservedAt []int
	buf        []framework.Blocker
	// kept holds the plan's blockers, carved from large blocks: most
	// sessions of a full group wait, each with a blocker or two.
	kept []framework.Blocker
	// gangs are the round's jobs still short of min-available (gang.go).
	gangs map[domain.JobID]*gang
	// preemptor chooses victims when the group preempts; nil otherwise.
	preemptor *framework.Preemptor
}

// try validates and places one session, recording the outcome in the plan.
func (r *round) try(s *framework.Session) bool {
	if g := r.gangs[s.Pending.Session.Job]; g != nil && s.Pending.Session.Job != "" {
		return r.tryGang(g, s)
	}
	r.buf = r.buf[:0]
	for _, v := range r.validators {
		r.buf = v.Validate(r.st, s, r.buf)
	}
	if len(r.buf) > 0 {
		r.record(s, r.buf)
		return false
	}
	if r.blockedBy != "" {
		r.record(s, []framework.Blocker{{Kind: framework.BlockQueuePosition, Scope: "session:" + string(r.blockedBy)}})
		return false
	}
	kernels, blockers := r.place(s)
	if blockers != nil && r.preemptor != nil && contention(blockers) && r.preempt(s, blockers) {
		return false
	}
	if blockers != nil {
		if r.backfill != nil && contention(blockers) && !r.backfill.Full() {
			if res, ok := r.backfill.Reserve(s); ok {
				blockers = append(slices.Clone(blockers), framework.Blocker{Kind: framework.BlockReservation,
					Scope: res.Scope(), Detail: res.Start.UTC().Format(time.RFC3339)})
				r.reservedAt = append(r.reservedAt, len(r.plan.Waiting))
			}
		}
		r.record(s, blockers)
		if r.block && contention(blockers) {
			r.blockedBy = s.Pending.Session.ID
		}
		return false
	}
	r.st.Commit(s)
	r.plan.Placements = append(r.plan.Placements, framework.Placement{Session: s.Pending.Session.ID, Kernels: kernels})
	if r.backfill != nil && r.backfill.Track(s, kernels) {
		r.plan.Backfilled = append(r.plan.Backfilled, s.Pending.Session.ID)
	}
	return true
}

// preempt asks for victims for s, which could not be placed for
// capacity; when it gets them (or its victims are still ending) s waits
// with a blocker naming them and takes no reservation: its slots come
// from its victims.
func (r *round) preempt(s *framework.Session, blockers []framework.Blocker) bool {
	if r.backfill != nil {
		// Victims are chosen over the agents as they are, not as the
		// reservations' holds leave them.
		r.backfill.Finish()
	}
	out, b, ok := r.preemptor.Preempt(s)
	if !ok {
		return false
	}
	r.plan.Preemptions = append(r.plan.Preemptions, out...)
	r.record(s, append(slices.Clone(blockers), b))
	return true
}

// place puts s on agents; under head-of-line reserve, off the slots the
// round's reservations hold against it. Job members go this way too, so a
// gang cannot delay a reservation.
func (r *round) place(s *framework.Session) ([]framework.KernelPlacement, []framework.Blocker) {
	if r.backfill != nil {
		return r.backfill.Place(s, r.sel)
	}
	return r.st.Place(s, r.sel)
}

// contention reports whether a session failed for slots others hold, the
// failures that block the line or earn a reservation: a session that
// cannot use any agent at all (architecture, no agents) takes nothing from
// the sessions behind it.
func contention(blockers []framework.Blocker) bool {
	return blockers[0].Kind == framework.BlockCapacity || blockers[0].Kind == framework.BlockGang
}

// finishReservations puts the round's reservations in the plan and writes
// into each reserved session's blocker how many sessions were placed past
// it.
func (r *round) finishReservations() {
	r.backfill.Finish()
	r.plan.Reservations = r.backfill.Reservations()
	for i, at := range r.reservedAt {
		bs := r.plan.Waiting[at].Blockers
		bs[len(bs)-1].Requested = domain.Quantity(r.plan.Reservations[i].Backfilled)
	}
}

func (r *round) record(s *framework.Session, blockers []framework.Blocker) {
	if cap(r.kept)-len(r.kept) < len(blockers) {
		r.kept = make([]framework.Blocker, 0, max(4096, len(blockers)))
	}
	start := len(r.kept)
	r.kept = append(r.kept, blockers...)
	d := framework.Decision{Session: s.Pending.Session.ID, Blockers: r.kept[start:len(r.kept):len(r.kept)]}
	for _, b := range blockers {
		if b.Impossible {
			r.plan.Impossible = append(r.plan.Impossible, d)
			return
		}
	}
	r.plan.Waiting = append(r.plan.Waiting, d)
}

// bands splits the sessions by priority, highest first. Each band is in
// index order; the sequencer imposes its own order within it. Priorities
// are few, so sessions are dealt into one bucket per priority rather than
// sorted.
func bands(st *framework.State) [][]int32 {
	bucket := make(map[int]int)
	var prios []int
	var counts []int
	of := make([]int32, len(st.Sessions))
	for i := range st.Sessions {
		p := st.Sessions[i].Pending.Session.Priority
		b, ok := bucket[p]
		if !ok {
			b = len(prios)
			bucket[p] = b
			prios = append(prios, p)
			counts = append(counts, 0)
		}
		of[i] = int32(b)
		counts[b]++
	}
	// Lay the buckets out highest priority first in one backing array.
	order := make([]int, len(prios))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(prios[b], prios[a]) })
	idx := make([]int32, len(st.Sessions))
	out := make([][]int32, len(prios))
	start := 0
	for _, b := range order {
		out[b] = idx[start : start : start+counts[b]]
		start += counts[b]
	}
	for i, b := range of {
		out[b] = append(out[b], int32(i))
	}
	sorted := make([][]int32, len(order))
	for i, b := range order {
		sorted[i] = out[b]
	}
	return sorted
}
