package store

import (
	"context"
	"time"
)

// FeedReader is what a Follower reads of the change feed.
type FeedReader interface {
	Changes(ctx context.Context, f ChangeFilter) ([]Change, error)
	LastChange(ctx context.Context) (int64, error)
}

// Follower reads the change feed from where it last stopped, a page at a
// time, for a reader that must know when it cannot rely on what it read:
// at its first read, after a failure, when a whole page came (the rest of
// a backlog is not read: everything is to be taken as changed), and when
// its last read is older than half the feed's retention (the feed may
// have been pruned past its position). Each of those starts it again from
// the feed's end and says so, and the caller then treats everything as
// changed. It is not safe for concurrent use; its callers hold their own
// lock.
type Follower struct {
	// Page caps the changes one Next reads.
	Page int

	pos     int64
	read    time.Time
	started bool
}

// Next returns the changes after the last position read, or restarted
// true (and no changes) when the follower started again from the feed's
// end. now is the caller's clock; retention the feed's.
func (f *Follower) Next(ctx context.Context, r FeedReader, now time.Time, retention time.Duration) (
	changes []Change, restarted bool, err error) {
	if !f.started || now.Sub(f.read) > retention/2 {
		return nil, true, f.restart(ctx, r, now)
	}
	chs, err := r.Changes(ctx, ChangeFilter{After: f.pos, Limit: f.Page})
	if err != nil {
		f.started = false
		return nil, true, err
	}
	f.read = now
	if f.Page > 0 && len(chs) >= f.Page {
		return nil, true, f.restart(ctx, r, now)
	}
	if len(chs) > 0 {
		f.pos = chs[len(chs)-1].Pos
	}
	return chs, false, nil
}

// Started reports whether the follower has a position to go on from: not
// before its first read, nor after a failed one.
func (f *Follower) Started() bool { return f.started }

// Pos is the feed position read up to.
func (f *Follower) Pos() int64 { return f.pos }

func (f *Follower) restart(ctx context.Context, r FeedReader, now time.Time) error {
	last, err := r.LastChange(ctx)
	if err != nil {
		f.started = false
		return err
	}
	f.pos, f.read, f.started = max(f.pos, last), now, true
	return nil
}
