package api

import (
	"context"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/store"
)

// feed is the one reader of the store's change feed that every event
// stream of this manager shares: one poll per interval however many
// streams are open, instead of one per stream. It keeps the latest changes
// in a window; a stream whose position is inside the window reads from
// it, and one further behind (a resume from long ago, a slow client)
// catches up from the store on its own first.
//
// The reader runs only while a stream is subscribed, so the feed needs no
// lifetime of its own.
type feed struct {
	store  Store
	poll   time.Duration
	window int
	polls  func() // counts reads of the store, for the metric

	mu     sync.Mutex
	subs   int
	cancel context.CancelFunc
	// recent holds every change after base up to head, in position order:
	// head is how far the reader has read, base where the window begins
	// (where the reader started, or the last change it let go).
	recent     []store.Change
	base, head int64
	// tick is closed, and replaced, whenever head moves or the reader
	// stops.
	tick chan struct{}
	err  error
}

func newFeed(st Store, poll time.Duration, window int, polls func()) *feed {
	return &feed{store: st, poll: poll, window: window, polls: polls, tick: make(chan struct{})}
}

// subscribe registers a stream, starting the reader at the feed's latest
// position if it is the first; unsubscribe must follow.
func (f *feed) subscribe(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs++
	if f.subs > 1 {
		return nil
	}
	last, err := f.store.LastChange(ctx)
	if err != nil {
		f.subs--
		return err
	}
	f.recent, f.base, f.head, f.err = nil, last, last, nil
	rctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go f.read(rctx)
	return nil
}

func (f *feed) unsubscribe() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs--
	if f.subs == 0 {
		f.cancel()
	}
}

// read polls the store until its context ends or a read fails; a failure
// is kept for the streams to report, and ends them.
func (f *feed) read(ctx context.Context) {
	t := time.NewTicker(f.poll)
	defer t.Stop()
	for {
		f.mu.Lock()
		after := f.head
		f.mu.Unlock()
		f.polls()
		changes, err := f.store.Changes(ctx, store.ChangeFilter{After: after, Limit: eventBatch})
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		if err != nil {
			f.err = err
			close(f.tick)
			f.tick = make(chan struct{})
			f.mu.Unlock()
			return
		}
		if len(changes) > 0 {
			f.recent = append(f.recent, changes...)
			if over := len(f.recent) - f.window; over > 0 {
				f.base = f.recent[over-1].Pos
				f.recent = append(f.recent[:0:0], f.recent[over:]...)
			}
			f.head = changes[len(changes)-1].Pos
			close(f.tick)
			f.tick = make(chan struct{})
		}
		f.mu.Unlock()
		if len(changes) == eventBatch {
			continue // more are waiting
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// since returns the window's changes after pos that keep passes, the
// position they take the caller to, and a channel closed when there may be
// more. ok is false when pos lies before the window: the caller must read
// the store itself up to the window first.
func (f *feed) since(pos int64, keep func(store.Change) bool) (out []store.Change, upto int64, next <-chan struct{}, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, pos, nil, true, f.err
	}
	if pos < f.base {
		return nil, pos, nil, false, nil
	}
	for _, c := range f.recent {
		if c.Pos > pos && keep(c) {
			out = append(out, c)
		}
	}
	return out, max(pos, f.head), f.tick, true, nil
}

// position is how far the reader has read.
func (f *feed) position() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head
}
