package sqlstore

import (
	"context"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// number has an engine whose changes get their position after commit
// (ChangeNumberer) give one to every committed change still without, so
// that a reader that just committed a change finds it.
func (s *Store) number(ctx context.Context) error {
	n, ok := s.eng.(ChangeNumberer)
	if !ok {
		return nil
	}
	return s.write(ctx, "number changes", func(tx txn) error {
		return n.NumberChanges(ctx, tx.tx)
	})
}

// feedTail is the end of the feed as a read found it, for a SoleWriter
// engine: pos, the last position, and writes, the count of this store's
// ended write transactions before that read began. While the count has
// not moved, no change after pos can exist, since only this process
// writes and every change is written in a write transaction.
type feedTail struct {
	mu     sync.Mutex
	known  bool
	pos    int64
	writes uint64
}

// Changes reads the change feed after f.After.
func (s *Store) Changes(ctx context.Context, f store.ChangeFilter) ([]store.Change, error) {
	if err := s.number(ctx); err != nil {
		return nil, err
	}
	writes := s.writes.Load()
	if s.sole && s.tail.past(f.After, writes) {
		return nil, nil
	}
	if err := s.hook(store.FaultFeedQuery); err != nil {
		return nil, err
	}
	args := []any{f.After, f.User, List(codec.Strings(f.Sessions)), limit(f.Limit)}
	out, err := readAll(ctx, s, "changes", selectChanges, args, codec.ScanChange)
	// Only a read of every kind of change that came short of its limit
	// reached the end of the feed.
	if err == nil && s.sole && f.User == "" && len(f.Sessions) == 0 && (f.Limit <= 0 || len(out) < f.Limit) {
		end := f.After
		if n := len(out); n > 0 {
			end = out[n-1].Pos
		}
		s.tail.found(end, writes)
	}
	return out, err
}

// past reports whether no change after after can exist: the feed ended
// at or before it when writes was last the count of ended writes.
func (t *feedTail) past(after int64, writes uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.known && t.writes == writes && after >= t.pos
}

// found records that a read begun at writes ended writes found the feed
// ending at pos; an older read's finding does not replace a newer one's.
func (t *feedTail) found(pos int64, writes uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.known || writes > t.writes || writes == t.writes && pos > t.pos {
		t.known, t.pos, t.writes = true, pos, writes
	}
}

// LastChange returns the latest feed position.
func (s *Store) LastChange(ctx context.Context) (int64, error) {
	if err := s.number(ctx); err != nil {
		return 0, err
	}
	var pos int64
	err := s.read(ctx, "last change", func(tx txn) error {
		return tx.queryRow(ctx, selectLastChange).Scan(&pos)
	})
	return pos, err
}

// PruneChanges deletes old changes, keeping the latest.
func (s *Store) PruneChanges(ctx context.Context, before time.Time) (int64, error) {
	if err := s.number(ctx); err != nil {
		return 0, err
	}
	return s.deleteBefore(ctx, "prune changes", pruneChanges, before)
}
