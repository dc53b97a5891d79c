package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// RecordUtilisation samples every group's ALIVE agents at now, in one
// statement: the sums run over the stored base-unit integers in SQL, so no
// agent row is decoded and the sample is one consistent read.
func (s *Store) RecordUtilisation(ctx context.Context, now time.Time) error {
	return s.write(ctx, "record utilisation", func(tx txn) error {
		_, err := tx.exec(ctx, recordUtilisation, ts(now))
		return err
	})
}

// Utilisation averages a group's samples per step in SQL, so a week read
// at a coarse step returns a few hundred rows rather than every sample.
func (s *Store) Utilisation(ctx context.Context, group string, from, to time.Time, step time.Duration) ([]store.UtilisationPoint, error) {
	if step < time.Microsecond {
		return nil, fmt.Errorf("utilisation: %w: step %v is under the stored precision of 1µs", store.ErrInvalid, step)
	}
	if !to.After(from) {
		return nil, nil
	}
	from = from.Truncate(time.Microsecond)
	micros := step.Microseconds()
	args := []any{group, ts(from), from.UnixMicro(), micros, ts(to)}
	return readAll(ctx, s, "utilisation", selectUtilisation, args, func(sc codec.Scanner) (store.UtilisationPoint, error) {
		var p store.UtilisationPoint
		var n int64
		err := sc.Scan(&n, &p.Slot, &p.Capacity, &p.Occupied, &p.Samples)
		p.At = from.Add(time.Duration(n) * time.Duration(micros) * time.Microsecond)
		return p, err
	})
}

// PruneUtilisation deletes samples taken before before; the index on at
// makes its cost the number of rows it deletes.
func (s *Store) PruneUtilisation(ctx context.Context, before time.Time) (int64, error) {
	return s.deleteBefore(ctx, "prune utilisation", pruneUtilisation, before)
}

// HeldByUser sums what each user's kernels hold in SQL: a metrics scrape
// then reads a row per user and slot, not every live kernel and session.
func (s *Store) HeldByUser(ctx context.Context) (map[string]domain.Vec, error) {
	out := map[string]domain.Vec{}
	err := s.read(ctx, "held by user", func(tx txn) error {
		return tx.query(ctx, selectHeldByUser, nil, func(sc codec.Scanner) error {
			var user, slot string
			var sum int64
			if err := sc.Scan(&user, &slot, &sum); err != nil {
				return err
			}
			id, ok := s.reg.Lookup(slot)
			if !ok {
				return &store.CorruptRowError{Table: "kernels", ID: "held by user " + user, Column: "requested",
					Err: fmt.Errorf("slot %q: %w", slot, domain.ErrUnknownSlot)}
			}
			v, ok := out[user]
			if !ok {
				v = s.reg.NewVec()
				out[user] = v
			}
			v[id] = domain.AddSat(v[id], domain.Quantity(sum))
			return nil
		})
	})
	return out, err
}
