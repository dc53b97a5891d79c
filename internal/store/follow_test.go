package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/store"
)

// feed is a change feed in memory, with a failure to inject: a fake at
// the edge, for the follower's own rules; the coordinator's tests follow
// both real engines' feeds through it.
type feed struct {
	changes []store.Change
	fail    error
}

func (f *feed) Changes(_ context.Context, c store.ChangeFilter) ([]store.Change, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	var out []store.Change
	for _, ch := range f.changes {
		if ch.Pos > c.After && (c.Limit == 0 || len(out) < c.Limit) {
			out = append(out, ch)
		}
	}
	return out, nil
}

func (f *feed) LastChange(context.Context) (int64, error) {
	if f.fail != nil {
		return 0, f.fail
	}
	if len(f.changes) == 0 {
		return 0, nil
	}
	return f.changes[len(f.changes)-1].Pos, nil
}

func (f *feed) add(n int) {
	for range n {
		f.changes = append(f.changes, store.Change{Pos: int64(len(f.changes) + 1)})
	}
}

// TestFollowerRestartsWhenInDoubt: a follower says "restarted" (take
// everything as changed) at its first read, after a failure, on a full
// page and after a long pause, and otherwise returns exactly the changes
// since its last read.
func TestFollowerRestartsWhenInDoubt(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const retention = time.Hour
	f := &feed{}
	f.add(3)
	fl := store.Follower{Page: 5}
	next := func(at time.Time) (int, bool, error) {
		chs, restarted, err := fl.Next(ctx, f, at, retention)
		return len(chs), restarted, err
	}
	if n, r, err := next(t0); n != 0 || !r || err != nil || fl.Pos() != 3 {
		t.Fatalf("first read: %d changes, restarted %v, %v, pos %d; want a restart at the feed's end (3)", n, r, err, fl.Pos())
	}
	f.add(2)
	if n, r, _ := next(t0.Add(time.Second)); n != 2 || r || fl.Pos() != 5 {
		t.Fatalf("two new changes: %d, restarted %v, pos %d", n, r, fl.Pos())
	}
	f.add(5) // a full page: the backlog is not read
	if n, r, _ := next(t0.Add(2 * time.Second)); n != 0 || !r || fl.Pos() != 10 {
		t.Fatalf("a full page: %d, restarted %v, pos %d; want a restart at 10", n, r, fl.Pos())
	}
	f.fail = errors.New("store down")
	if _, r, err := next(t0.Add(3 * time.Second)); !r || err == nil || fl.Started() {
		t.Fatalf("a failed read: restarted %v, %v, started %v", r, err, fl.Started())
	}
	f.fail = nil
	f.add(1)
	if n, r, _ := next(t0.Add(4 * time.Second)); n != 0 || !r || fl.Pos() != 11 {
		t.Fatalf("after a failure: %d, restarted %v, pos %d; want a restart", n, r, fl.Pos())
	}
	f.add(1)
	if n, r, _ := next(t0.Add(4*time.Second + retention/2 + time.Second)); n != 0 || !r {
		t.Fatalf("after more than half the retention: %d, restarted %v; want a restart", n, r)
	}
}
