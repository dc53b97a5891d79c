package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// AppendHistory records handler outcomes, merging repeats (seed 001).
func (s *Store) AppendHistory(ctx context.Context, entries []domain.HistoryEntry) error {
	if len(entries) == 0 {
		return nil
	}
	var ids []string
	seen := map[domain.SessionID]bool{}
	for _, e := range entries {
		if !seen[e.SessionID] {
			seen[e.SessionID] = true
			ids = append(ids, string(e.SessionID))
		}
	}
	return s.write(ctx, "append history", func(tx *sql.Tx) error {
		last := make(map[domain.SessionID]codec.HistoryRow, len(ids))
		if err := collect(ctx, tx, selectLastHistory, []any{jsonList(ids)}, func(sc codec.Scanner) error {
			id, h, err := codec.ScanHistory(sc)
			last[h.SessionID] = codec.HistoryRow{RowID: id, Entry: h}
			return err
		}); err != nil {
			return err
		}
		updates, inserts := codec.MergeHistory(last, entries)
		for _, u := range updates {
			if err := execN(ctx, tx, 1, mergeHistory, u.Entry.Attempt, ts(u.Entry.At), u.RowID); err != nil {
				return err
			}
		}
		if len(inserts) == 0 {
			return nil
		}
		stmt, err := tx.PrepareContext(ctx, insertHistory)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, h := range inserts {
			if _, err := stmt.ExecContext(ctx, string(h.SessionID), ts(h.At), string(h.Handler), string(h.Result),
				codec.StatusName(h.From), codec.StatusName(h.To), h.Message, h.Attempt); err != nil {
				return err
			}
		}
		return nil
	})
}

// History returns a session's entries oldest first.
func (s *Store) History(ctx context.Context, id domain.SessionID) ([]domain.HistoryEntry, error) {
	var out []domain.HistoryEntry
	err := s.read(ctx, "history of session "+string(id), func(tx *sql.Tx) error {
		return collect(ctx, tx, selectHistory, []any{string(id)}, func(sc codec.Scanner) error {
			_, h, err := codec.ScanHistory(sc)
			out = append(out, h)
			return err
		})
	})
	return out, err
}

// IncrementTries counts one more failed try in the phase for each session.
func (s *Store) IncrementTries(ctx context.Context, phase domain.HandlerName, ids []domain.SessionID) (map[domain.SessionID]int, error) {
	out := make(map[domain.SessionID]int, len(ids))
	err := s.write(ctx, fmt.Sprintf("increment %s tries", phase), func(tx *sql.Tx) error {
		clear(out)
		return collect(ctx, tx, incrementTries, []any{jsonList(unique(ids)), string(phase)}, func(sc codec.Scanner) error {
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
	return s.write(ctx, fmt.Sprintf("reset %s tries", phase), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, resetTries, string(phase), jsonList(codec.Strings(ids)))
		return err
	})
}

// Tries returns a session's try counts by phase.
func (s *Store) Tries(ctx context.Context, id domain.SessionID) (map[domain.HandlerName]int, error) {
	out := map[domain.HandlerName]int{}
	err := s.read(ctx, "tries of session "+string(id), func(tx *sql.Tx) error {
		return collect(ctx, tx, selectTries, []any{string(id)}, func(sc codec.Scanner) error {
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
	checkKernelStatuses []domain.KernelStatus, match domain.Match) ([]domain.SessionID, error) {
	query, err := matchQuery(match)
	if err != nil {
		return nil, err
	}
	var out []domain.SessionID
	err = s.read(ctx, "sessions matching "+match.String(), func(tx *sql.Tx) error {
		args := []any{jsonList(codec.StatusNames(sessionStatuses)), jsonList(codec.StatusNames(checkKernelStatuses))}
		return collect(ctx, tx, query, args, func(sc codec.Scanner) error {
			var id string
			err := sc.Scan(&id)
			out = append(out, domain.SessionID(id))
			return err
		})
	})
	return out, err
}

func matchQuery(m domain.Match) (string, error) {
	switch m {
	case domain.MatchAll:
		return matchAll, nil
	case domain.MatchAny:
		return matchAny, nil
	case domain.MatchNotAny:
		return matchNotAny, nil
	}
	return "", fmt.Errorf("sessions matching: %w: unknown match %d", store.ErrInvalid, m)
}

func unique(ids []domain.SessionID) []string {
	seen := make(map[domain.SessionID]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, string(id))
		}
	}
	return out
}
