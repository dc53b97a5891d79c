package sqlstore

import (
	"context"
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

// Changes reads the change feed after f.After.
func (s *Store) Changes(ctx context.Context, f store.ChangeFilter) ([]store.Change, error) {
	if err := s.number(ctx); err != nil {
		return nil, err
	}
	args := []any{f.After, f.User, List(codec.Strings(f.Sessions)), limit(f.Limit)}
	return readAll(ctx, s, "changes", selectChanges, args, codec.ScanChange)
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
