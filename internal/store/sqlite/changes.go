package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// The feed position is the row's seq: with one writer at a time, rows
// commit in seq order, so a reader never passes a gap that fills later.
const (
	selectChanges = `SELECT seq, ` + codec.ChangeColumns + ` FROM status_changes
WHERE seq > ?1
  AND (?2 = '' OR owner_user = ?2)
  AND (?3 = '[]' OR session_id IN (SELECT value FROM json_each(?3)))
ORDER BY seq
LIMIT ?4`
	selectLastChange = `SELECT COALESCE(MAX(seq), 0) FROM status_changes`
	// Walks the primary key from the oldest row to the first young one, so
	// its cost is the number of rows it deletes.
	pruneChanges = `DELETE FROM status_changes WHERE seq < COALESCE(
    (SELECT seq FROM status_changes WHERE at >= ?1 ORDER BY seq LIMIT 1),
    (SELECT MAX(seq) FROM status_changes))`
)

// Changes reads the change feed after f.After.
func (s *Store) Changes(ctx context.Context, f store.ChangeFilter) ([]store.Change, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	var out []store.Change
	err := s.read(ctx, "changes", func(tx *sql.Tx) error {
		out = out[:0]
		args := []any{f.After, f.User, jsonList(codec.Strings(f.Sessions)), limit}
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
	var pos int64
	err := s.read(ctx, "last change", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, selectLastChange).Scan(&pos)
	})
	return pos, err
}

// PruneChanges deletes old changes, keeping the latest.
func (s *Store) PruneChanges(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, "prune changes", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, pruneChanges, ts(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
