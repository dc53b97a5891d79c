package scheduler

import (
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// gang is one job's members in this round (seed 004's coscheduling). The
// round decides the whole gang the first time the sequencer hands out
// any member: either at least `needed` members fit together and are
// placed, or none is and nothing stays reserved. Volcano's rule, not
// scheduler-plugins': no partial gang holds resources across rounds, so
// two gangs interleaving cannot deadlock each other.
type gang struct {
	id      domain.JobID
	info    framework.JobInfo
	members []int32 // indexes into State.Sessions, in snapshot order
	decided bool
	placed  map[int32]bool
}

// gangs indexes the round's job members by job. A job whose placed
// members already reach min-available needs no gang any more: its further
// members are placed one by one, as the seed's Permit lets them through.
func gangs(st *framework.State) map[domain.JobID]*gang {
	if len(st.Snap.Jobs) == 0 {
		return nil
	}
	out := map[domain.JobID]*gang{}
	for i := range st.Sessions {
		id := st.Sessions[i].Pending.Session.Job
		info, ok := st.Snap.Jobs[id]
		if id == "" || !ok || info.Placed >= info.MinAvailable {
			continue
		}
		g := out[id]
		if g == nil {
			g = &gang{id: id, info: info, placed: map[int32]bool{}}
			out[id] = g
		}
		g.members = append(g.members, st.Sessions[i].Index)
	}
	return out
}

// tryGang decides s's gang if it is not decided yet and reports whether s
// was placed. Every member's outcome is recorded once, when the gang is
// decided.
func (r *round) tryGang(g *gang, s *framework.Session) bool {
	if g.decided {
		return g.placed[s.Index]
	}
	g.decided = true
	scope := "job:" + string(g.id)
	// PreFilter: too few members exist to ever make the gang this round.
	if g.info.Live < g.info.MinAvailable {
		b := framework.Blocker{Kind: framework.BlockGang, Scope: scope, Slot: framework.MembersSlot,
			Requested: domain.Quantity(g.info.MinAvailable), Available: domain.Quantity(g.info.Live),
			Detail: fmt.Sprintf("%d of %d members submitted", g.info.Live, g.info.MinAvailable)}
		for _, i := range g.members {
			// The member's own reasons follow, so one that can never run
			// is cancelled now rather than when its gang is complete.
			m := &r.st.Sessions[i]
			r.buf = append(r.buf[:0], b)
			for _, v := range r.validators {
				r.buf = v.Validate(r.st, m, r.buf)
			}
			r.record(m, r.buf)
		}
		return false
	}
	if r.blockedBy != "" {
		b := framework.Blocker{Kind: framework.BlockQueuePosition, Scope: "session:" + string(r.blockedBy)}
		for _, i := range g.members {
			r.record(&r.st.Sessions[i], []framework.Blocker{b})
		}
		return false
	}
	needed := g.info.MinAvailable - g.info.Placed
	cursor := r.st.Cursor
	type held struct {
		s       *framework.Session
		kernels []framework.KernelPlacement
	}
	var got []held
	failed := map[int32][]framework.Blocker{}
	for _, i := range g.members {
		m := &r.st.Sessions[i]
		r.buf = r.buf[:0]
		for _, v := range r.validators {
			r.buf = v.Validate(r.st, m, r.buf)
		}
		if len(r.buf) > 0 {
			failed[i] = append([]framework.Blocker(nil), r.buf...)
			continue
		}
		kernels, blockers := r.place(m)
		if blockers != nil {
			failed[i] = append([]framework.Blocker(nil), blockers...)
			continue
		}
		// Commit at once so the next member's quota checks count this one.
		r.st.Commit(m)
		got = append(got, held{m, kernels})
	}
	if len(got) >= needed {
		for _, h := range got {
			g.placed[h.s.Index] = true
			r.plan.Placements = append(r.plan.Placements, framework.Placement{Session: h.s.Pending.Session.ID, Kernels: h.kernels})
			// Once the gang stands, its members count as the round's other
			// placements do toward the reservations' replay.
			if r.backfill != nil && r.backfill.Track(h.s, h.kernels) {
				r.plan.Backfilled = append(r.plan.Backfilled, h.s.Pending.Session.ID)
			}
		}
		for _, i := range g.members {
			if b, ok := failed[i]; ok {
				r.record(&r.st.Sessions[i], b)
			}
		}
		return g.placed[s.Index]
	}
	// Unreserve: the gang does not fit whole, so every member placed for it
	// gives its slots back, last first, and the cursor returns.
	for j := len(got) - 1; j >= 0; j-- {
		r.st.Release(got[j].s, got[j].kernels)
		r.st.Uncommit(got[j].s)
	}
	r.st.Cursor = cursor
	gb := framework.Blocker{Kind: framework.BlockGang, Scope: scope,
		Detail: fmt.Sprintf("only %d of the %d members needed fit together; none is placed", len(got), needed)}
	for _, i := range g.members {
		// A member's own reasons follow; one that can never run is thus
		// cancelled rather than held for a gang it cannot join.
		bs := append([]framework.Blocker{gb}, failed[i]...)
		r.record(&r.st.Sessions[i], bs)
	}
	if r.block {
		r.blockedBy = s.Pending.Session.ID
	}
	return false
}
