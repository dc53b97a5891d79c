package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// AppendHistory records handler outcomes, merging repeats (seed 001). The
// sessions are locked so that two appenders cannot both decide to start a
// new entry for the same repeat.
func (s *Store) AppendHistory(ctx context.Context, entries []domain.HistoryEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return s.write(ctx, "append history", func(tx txn) error {
		return appendHistory(ctx, tx, entries)
	})
}

// appendHistory is AppendHistory in tx.
func appendHistory(ctx context.Context, tx txn, entries []domain.HistoryEntry) error {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = string(e.Subject)
	}
	ids = uniqueSorted(ids)
	if err := tx.lock(ctx, lockSessions, List(ids)); err != nil {
		return err
	}
	last := make(map[domain.SessionID]codec.HistoryRow, len(ids))
	if err := tx.query(ctx, selectLastHistory, []any{List(ids)}, func(sc codec.Scanner) error {
		id, h, err := codec.ScanHistory(sc)
		last[h.Subject] = codec.HistoryRow{RowID: id, Entry: h}
		return err
	}); err != nil {
		return err
	}
	updates, inserts := codec.MergeHistory(last, entries)
	if len(updates) > 0 {
		rowIDs, attempts, times := make([]int64, len(updates)), make([]int32, len(updates)), make([]time.Time, len(updates))
		for i, u := range updates {
			rowIDs[i], attempts[i], times[i] = u.RowID, int32(u.Entry.Attempt), u.Entry.At.UTC()
		}
		if err := tx.execN(ctx, len(updates), mergeHistory, Rows{rowIDs, attempts, times}); err != nil {
			return err
		}
	}
	if len(inserts) == 0 {
		return nil
	}
	n := len(inserts)
	sessions, at, handlers, results := make([]string, n), make([]time.Time, n), make([]string, n), make([]string, n)
	from, to, messages, attempts := make([]string, n), make([]string, n), make([]string, n), make([]int32, n)
	for i, h := range inserts {
		sessions[i], at[i], handlers[i], results[i] = string(h.Subject), h.At.UTC(), string(h.Cause), string(h.Result)
		from[i], to[i], messages[i], attempts[i] = codec.StatusName(h.From), codec.StatusName(h.To), h.Message, int32(h.Attempt)
	}
	return tx.execN(ctx, n, insertHistory, Rows{sessions, at, handlers, results, from, to, messages, attempts})
}

// History returns a session's entries oldest first.
func (s *Store) History(ctx context.Context, id domain.SessionID) ([]domain.HistoryEntry, error) {
	return readAll(ctx, s, "history of session "+string(id), selectHistory, []any{string(id)},
		func(sc codec.Scanner) (domain.HistoryEntry, error) {
			_, h, err := codec.ScanHistory(sc)
			return h, err
		})
}

// IncrementTries counts one more failed try in the phase for each session.
func (s *Store) IncrementTries(ctx context.Context, phase domain.HandlerName, ids []domain.SessionID) (map[domain.SessionID]int, error) {
	// Sorted, so concurrent increments take the row locks in one order.
	unique := uniqueSorted(codec.Strings(ids))
	out := make(map[domain.SessionID]int, len(unique))
	err := s.write(ctx, fmt.Sprintf("increment %s tries", phase), func(tx txn) error {
		clear(out)
		return tx.query(ctx, incrementTries, []any{List(unique), string(phase)}, func(sc codec.Scanner) error {
			var id string
			var n int
			err := sc.Scan(&id, &n)
			out[domain.SessionID(id)] = n
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ResetTries forgets the sessions' tries in the phase.
func (s *Store) ResetTries(ctx context.Context, phase domain.HandlerName, ids []domain.SessionID) error {
	return s.write(ctx, fmt.Sprintf("reset %s tries", phase), func(tx txn) error {
		_, err := tx.exec(ctx, resetTries, string(phase), List(codec.Strings(ids)))
		return err
	})
}

// Tries returns a session's try counts by phase.
func (s *Store) Tries(ctx context.Context, id domain.SessionID) (map[domain.HandlerName]int, error) {
	out := map[domain.HandlerName]int{}
	err := s.read(ctx, "tries of session "+string(id), func(tx txn) error {
		return tx.query(ctx, selectTries, []any{string(id)}, func(sc codec.Scanner) error {
			var phase string
			var n int
			err := sc.Scan(&phase, &n)
			out[domain.HandlerName(phase)] = n
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SessionsMatching runs seed 001's promotion check in SQL.
func (s *Store) SessionsMatching(ctx context.Context, sessionStatuses []domain.SessionStatus,
	checkKernelStatuses []domain.KernelStatus, match domain.Match, among ...domain.SessionID) ([]domain.SessionID, error) {
	var query string
	switch match {
	case domain.MatchAll:
		query = matchAll
	case domain.MatchAny:
		query = matchAny
	case domain.MatchNotAny:
		query = matchNotAny
	default:
		return nil, fmt.Errorf("sessions matching: %w: unknown match %d", store.ErrInvalid, match)
	}
	args := []any{List(codec.StatusNames(sessionStatuses)), List(codec.StatusNames(checkKernelStatuses))}
	if len(among) > 0 {
		query = matchAmong + query
		args = append(args, List(codec.Strings(among)))
	}
	query = matchFrom + query
	return readAll(ctx, s, "sessions matching "+match.String(), query, args, func(sc codec.Scanner) (domain.SessionID, error) {
		var id string
		err := sc.Scan(&id)
		return domain.SessionID(id), err
	})
}

func uniqueSorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
