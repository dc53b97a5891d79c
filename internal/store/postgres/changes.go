package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// Rows get their feed position after they commit (see the migration
// 00002_status_changes.sql for why seq cannot be the position). One reader
// at a time, under a transaction-scoped advisory lock, numbers every
// committed row still without a position, in seq order, after the highest
// position so far. The statement reads the highest position in its own
// snapshot, taken after the lock was granted, so it sees the previous
// holder's numbers.
const (
	anyUnnumbered = `SELECT EXISTS (SELECT 1 FROM status_changes WHERE pos IS NULL)`
	lockChanges   = `SELECT pg_advisory_xact_lock($1)`
	numberChanges = `WITH top AS (SELECT COALESCE(MAX(pos), 0) AS m FROM status_changes),
todo AS (SELECT seq, row_number() OVER (ORDER BY seq) AS rn FROM status_changes WHERE pos IS NULL)
UPDATE status_changes c SET pos = top.m + todo.rn FROM todo, top WHERE c.seq = todo.seq`
	selectChanges = `SELECT pos, ` + codec.ChangeColumns + ` FROM status_changes
WHERE pos > $1
  AND ($2 = '' OR owner_user = $2)
  AND (cardinality($3::text[]) = 0 OR session_id = ANY($3))
ORDER BY pos
LIMIT $4`
	selectLastChange = `SELECT COALESCE(MAX(pos), 0) FROM status_changes`
	// Only numbered rows go, and never the highest position: numbering
	// continues after MAX(pos), which must not go back. Walks the position
	// index from the oldest row to the first young one.
	pruneChanges = `DELETE FROM status_changes WHERE pos IS NOT NULL AND pos < COALESCE(
    (SELECT pos FROM status_changes WHERE pos IS NOT NULL AND at >= $1 ORDER BY pos LIMIT 1),
    (SELECT MAX(pos) FROM status_changes))`
)

// number gives every committed change without a position its position.
// It writes only when there is something to number, so idle watchers
// cost one index probe each.
func (s *Store) number(ctx context.Context) error {
	return s.write(ctx, "number changes", func(tx pgx.Tx) error {
		var pending bool
		if err := tx.QueryRow(ctx, anyUnnumbered).Scan(&pending); err != nil || !pending {
			return err
		}
		// Blocking, not try-lock: a caller that just committed a change
		// must find it numbered when this returns.
		if _, err := tx.Exec(ctx, lockChanges, s.changesLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, numberChanges)
		return err
	})
}

// Changes reads the change feed after f.After.
func (s *Store) Changes(ctx context.Context, f store.ChangeFilter) ([]store.Change, error) {
	if err := s.number(ctx); err != nil {
		return nil, err
	}
	var limit any // NULL: no limit
	if f.Limit > 0 {
		limit = f.Limit
	}
	var out []store.Change
	err := s.read(ctx, "changes", func(tx pgx.Tx) error {
		out = out[:0]
		args := []any{f.After, f.User, codec.Strings(f.Sessions), limit}
		return collect(ctx, tx, selectChanges, args, func(sc codec.Scanner) error {
			c, err := codec.ScanChange(sc)
			out = append(out, c)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LastChange returns the latest feed position.
func (s *Store) LastChange(ctx context.Context) (int64, error) {
	if err := s.number(ctx); err != nil {
		return 0, err
	}
	var pos int64
	err := s.read(ctx, "last change", func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, selectLastChange).Scan(&pos)
	})
	return pos, err
}

// PruneChanges deletes old changes, keeping the latest.
func (s *Store) PruneChanges(ctx context.Context, before time.Time) (int64, error) {
	if err := s.number(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := s.write(ctx, "prune changes", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, pruneChanges, ts(before))
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
