package coordinator

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// touched follows the change feed for the promotion handlers. Whether a
// session is promoted depends only on its status and its kernels'
// statuses, and every change of either is a row of the feed naming the
// session. So once a handler has checked every session and moved every
// one that matched, only the sessions named by the feed since then can
// match it next: it checks those, by id, instead of every session in its
// statuses (with thousands running, that walk was the largest cost of a
// cycle).
//
// Anything in doubt makes a handler check everything, as before: its
// first check, one after a failure, a full page of changes, or a feed
// read long ago (pruned past the position, perhaps). The feed is the
// database's, so a change another manager made is followed alike.
type touched struct {
	mu   sync.Mutex
	feed store.Follower
	// log is the sessions changed after the oldest mark, in feed order.
	log []touch
	// mark is, per handler, the position its last complete check covered.
	mark map[domain.HandlerName]int64
}

type touch struct {
	pos     int64
	session domain.SessionID
	// into is the status a session change moved it to; zero for a
	// kernel's change.
	into domain.SessionStatus
}

// since returns the sessions handler h must check, and the position the
// check will cover once done; all when it must check every session.
func (t *touched) since(ctx context.Context, st Store, h domain.HandlerName, now time.Time, retention time.Duration) (
	ids []domain.SessionID, upTo int64, all bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tail, marked, err := t.after(ctx, st, h, now, retention)
	if !marked || err != nil {
		return nil, t.feed.Pos(), true, err
	}
	for _, x := range tail {
		ids = append(ids, x.session)
	}
	slices.Sort(ids)
	return slices.Compact(ids), t.feed.Pos(), false, nil
}

// movedInto reports whether a session moved into one of statuses since
// h's mark, and the position the answer covers; true when h has no mark
// or the feed must be taken as all changed. A handler that found no
// session in its statuses marks the position it read before looking
// (done): until a session moves into them, looking again finds none, and
// every such move is a row of the feed.
func (t *touched) movedInto(ctx context.Context, st Store, h domain.HandlerName, statuses []domain.SessionStatus,
	now time.Time, retention time.Duration) (bool, int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tail, marked, err := t.after(ctx, st, h, now, retention)
	if !marked || err != nil {
		return true, t.feed.Pos(), err
	}
	moved := slices.ContainsFunc(tail, func(x touch) bool { return x.into != 0 && slices.Contains(statuses, x.into) })
	return moved, t.feed.Pos(), nil
}

// after reads the feed on and returns the log after h's mark; marked is
// false when h has no mark or the feed restarted (everything is to be
// taken as changed). t.mu is held.
func (t *touched) after(ctx context.Context, st Store, h domain.HandlerName, now time.Time, retention time.Duration) (
	tail []touch, marked bool, err error) {
	t.feed.Page = feedPage
	chs, restarted, err := t.feed.Next(ctx, st, now, retention)
	if restarted {
		t.log = nil
		clear(t.mark)
		return nil, false, err
	}
	for _, ch := range chs {
		x := touch{pos: ch.Pos, session: ch.Session}
		if ch.Kind == store.ChangeSession {
			x.into, _ = domain.ParseSessionStatus(ch.To) // a name this release does not know matches nothing
		}
		t.log = append(t.log, x)
	}
	mark, ok := t.mark[h]
	if !ok {
		return nil, false, nil
	}
	// The log is in feed order: what is after the mark is its tail.
	i, _ := slices.BinarySearchFunc(t.log, mark+1, func(x touch, pos int64) int { return cmp.Compare(x.pos, pos) })
	return t.log[i:len(t.log):len(t.log)], true, nil
}

// done records that h checked every session it had to up to upTo.
func (t *touched) done(h domain.HandlerName, upTo int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.feed.Started() {
		return
	}
	if t.mark == nil {
		t.mark = map[domain.HandlerName]int64{}
	}
	t.mark[h] = upTo
	t.trim()
}

// forget makes h check everything next time: its check failed part way.
func (t *touched) forget(h domain.HandlerName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mark, h)
	t.trim()
}

// trim drops the log no handler still needs.
func (t *touched) trim() {
	if len(t.mark) == 0 {
		t.log = t.log[:0]
		return
	}
	oldest := int64(-1)
	for _, m := range t.mark {
		if oldest < 0 || m < oldest {
			oldest = m
		}
	}
	i := 0
	for i < len(t.log) && t.log[i].pos <= oldest {
		i++
	}
	t.log = append(t.log[:0], t.log[i:]...)
}
