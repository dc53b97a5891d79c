package coordinator

import (
	"context"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// feedPage caps the changes one cycle reads; a fuller page is taken as a
// change to everything rather than read to its end.
const feedPage = 1000

// idleRounds lets ScheduleNewSessions skip a group's round that could only
// repeat the group's last one: that round left no session waiting and none
// has been queued since, or it placed, refused and cancelled nothing and
// nothing it read has changed since. Loading a group's
// snapshot (every agent, every pending session) is most of an idle
// cycle's cost, and a cycle runs on every mark and every second.
//
// What a round reads changes in three ways, each tracked exactly, so the
// skip holds under several managers:
//   - sessions and kernels: the change feed, read from where the last
//     cycle stopped; only changes that could let a waiting session go
//     count (relevant);
//   - agents, the group's configuration and policies: the group's
//     generation, which the store bumps in the same transaction;
//   - time: the earliest starts_at or PENDING bound among the round's
//     waiting sessions, and the coordinator's own configuration.
//
// Anything in doubt (a full feed page, a store error, a feed read long
// ago) runs the round.
type idleRounds struct {
	mu sync.Mutex
	// feed is read from where the last cycle stopped; before its first
	// read, and whenever it restarts, every group runs.
	feed store.Follower
	// conf counts Configure calls: group defaults change bounds.
	conf  int64
	group map[string]idleRound
}

// idleRound is what a round that changed nothing leaves for the next.
type idleRound struct {
	// empty: the round left no session waiting. Until one is queued,
	// nothing else matters: a round with no pending session does nothing.
	empty bool
	gen   int64
	conf  int64
	// due is the earliest instant time alone could change the round; zero
	// when none.
	due time.Time
}

// observe reads the feed since the last cycle and forgets every idle round
// if a relevant change came. Forgetting is global because a change names
// its session, not its group, and reading the group would cost what it
// saves.
func (r *idleRounds) observe(ctx context.Context, st Store, now time.Time, retention time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.feed.Page = feedPage
	chs, restarted, err := r.feed.Next(ctx, st, now, retention)
	if restarted {
		// Nothing to rely on (a first read, a failure, a backlog, a read
		// long ago): every idle round is forgotten.
		clear(r.group)
		return err
	}
	var rel bool
	for _, ch := range chs {
		if queued(ch) {
			clear(r.group)
			return nil
		}
		rel = rel || relevant(ch)
	}
	if rel {
		for g, m := range r.group {
			if !m.empty {
				delete(r.group, g)
			}
		}
	}
	return nil
}

// skip says whether the group's round can only repeat its last one.
func (r *idleRounds) skip(group string, gen int64, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.group[group]
	if ok && m.empty {
		return true
	}
	return ok && m.gen == gen && m.conf == r.conf && (m.due.IsZero() || now.Before(m.due))
}

// remember records the outcome of a round run at gen: empty (it left no
// session waiting), idle (it placed and cancelled nothing, and is due to
// change by time alone at due), or neither.
func (r *idleRounds) remember(group string, gen int64, empty, idle bool, due time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if empty {
		if r.group == nil {
			r.group = map[string]idleRound{}
		}
		r.group[group] = idleRound{empty: true}
		return
	}
	if !idle {
		delete(r.group, group)
		return
	}
	if r.group == nil {
		r.group = map[string]idleRound{}
	}
	r.group[group] = idleRound{gen: gen, conf: r.conf, due: due}
}

// nextDue is the earliest instant after now at which a skipped round
// would run again by time alone; zero when none.
func (r *idleRounds) nextDue(now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var due time.Time
	for _, m := range r.group {
		if m.due.After(now) && (due.IsZero() || m.due.Before(due)) {
			due = m.due
		}
	}
	return due
}

// reconfigured forgets every idle round: group defaults set bounds.
func (r *idleRounds) reconfigured() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conf++
}

// queued reports whether a change put a session in a queue: created, or
// sent back to PENDING.
func queued(ch store.Change) bool {
	return ch.Kind == store.ChangeSession && (ch.From == "" || ch.To == domain.SessionPending.String())
}

// relevant reports whether a change could let a session that waited go
// now: a session created, leaving or entering PENDING (a queue's order,
// its head, other groups' usage), ending (its dependants, concurrency
// counts), or anything that releases what a session or kernel held.
// Progress between holding statuses (SCHEDULED through TERMINATING) frees
// nothing and changes no count, so it is not relevant. A status this
// build does not know is.
func relevant(ch store.Change) bool {
	switch ch.Kind {
	case store.ChangeSession:
		if ch.From == "" {
			return true
		}
		from, err1 := domain.ParseSessionStatus(ch.From)
		to, err2 := domain.ParseSessionStatus(ch.To)
		if err1 != nil || err2 != nil {
			return true
		}
		return from == domain.SessionPending || to == domain.SessionPending || to.Terminal() ||
			from.HoldsResources() && !to.HoldsResources()
	case store.ChangeKernel:
		from, err1 := domain.ParseKernelStatus(ch.From)
		to, err2 := domain.ParseKernelStatus(ch.To)
		if err1 != nil || err2 != nil {
			return true
		}
		return to == domain.KernelPending || from.HoldsResources() && !to.HoldsResources()
	}
	return true
}

// idleDue is the earliest instant after now at which time alone could
// change a round over the waiting sessions: a starts_at reached or a
// PENDING bound passed. Zero when none.
func idleDue(pending []framework.PendingSession, bound time.Duration, now time.Time) time.Time {
	var due time.Time
	at := func(t time.Time) {
		if due.IsZero() || t.Before(due) {
			due = t
		}
	}
	for _, p := range pending {
		if s := p.Session.StartsAt; s.After(now) {
			at(s)
		}
		if bound > 0 {
			at(p.Session.StatusChangedAt.Add(bound))
		}
	}
	return due
}

// generation reads the group's generation for idleRounds; a group the
// store does not list gets -1, which no remembered round matches.
func generation(gens map[string]int64, group string) int64 {
	if g, ok := gens[group]; ok {
		return g
	}
	return -1
}
