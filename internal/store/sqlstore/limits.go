package sqlstore

import (
	"context"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

const (
	// A RUNNING session's status_changed_at is when it started running:
	// nothing rewrites it until it leaves RUNNING. Limits are stored in
	// nanoseconds and times compare in microseconds, the precision both
	// engines keep. The status index narrows the scan to RUNNING sessions.
	// A session with no kernel left running is ending on its own, with the
	// outcome its kernels' exit codes give; it is not failed for its limit.
	selectDue = `SELECT ` + codec.DueColumns + `
FROM sessions s JOIN resource_groups g ON g.name = s.resource_group
WHERE s.status = 'RUNNING'
  AND EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status = 'RUNNING')
  AND (
    (s.time_limit_ns > 0 AND {micros s.status_changed_at} + s.time_limit_ns / 1000 <= $1)
 OR (g.idle_timeout_ns > 0 AND s.type {in $2}
     AND {micros COALESCE(s.last_activity, s.status_changed_at)} + g.idle_timeout_ns / 1000 <= $1))
ORDER BY s.id`
	// The earliest instant after $1 at which a RUNNING session passes its
	// time limit or idle timeout, or a drain its deadline; 0 when none.
	// Durations round up to the microsecond: the hooks and drains judge
	// in nanoseconds, and a wake-up a fraction early would find nothing
	// due and then look only past it.
	selectNextDue = `SELECT COALESCE(MIN(d), 0) FROM (
  SELECT {micros s.status_changed_at} + (s.time_limit_ns + 999) / 1000 AS d
  FROM sessions s WHERE s.status = 'RUNNING' AND s.time_limit_ns > 0
  UNION ALL
  SELECT {micros COALESCE(s.last_activity, s.status_changed_at)} + (g.idle_timeout_ns + 999) / 1000
  FROM sessions s JOIN resource_groups g ON g.name = s.resource_group
  WHERE s.status = 'RUNNING' AND g.idle_timeout_ns > 0 AND s.type {in $2}
  UNION ALL
  SELECT (deadline_ns + 999) / 1000 FROM agent_drains WHERE deadline_ns > 0
) due WHERE d > $1`
	// Sessions the coordinator ended end as failures (Transition.Fail);
	// setOutcome keeps it.
	markFailed   = `UPDATE sessions SET outcome = 'failure' WHERE id {in $1}`
	touchSession = `UPDATE sessions SET last_activity = $1
WHERE id = $2 AND status = 'RUNNING' AND (last_activity IS NULL OR last_activity < $1)`
)

// DueSessions implements store.Store.
func (s *Store) DueSessions(ctx context.Context, now time.Time, idleTypes []domain.SessionType) ([]store.DueSession, error) {
	types := make([]string, len(idleTypes))
	for i, t := range idleTypes {
		types[i] = string(t)
	}
	return readAll(ctx, s, "due sessions", selectDue, []any{now.UnixMicro(), List(types)}, codec.ScanDue)
}

// NextDue implements store.Store.
func (s *Store) NextDue(ctx context.Context, after time.Time, idleTypes []domain.SessionType) (time.Time, error) {
	types := make([]string, len(idleTypes))
	for i, t := range idleTypes {
		types[i] = string(t)
	}
	var us int64
	err := s.read(ctx, "next due", func(tx txn) error {
		return tx.queryRow(ctx, selectNextDue, after.UnixMicro(), List(types)).Scan(&us)
	})
	if err != nil || us == 0 {
		return time.Time{}, err
	}
	return time.UnixMicro(us).UTC(), nil
}

// TouchSession implements store.Store.
func (s *Store) TouchSession(ctx context.Context, id domain.SessionID, at time.Time) error {
	return s.write(ctx, "touch session", func(tx txn) error {
		_, err := tx.exec(ctx, touchSession, ts(at), string(id))
		return err
	})
}
