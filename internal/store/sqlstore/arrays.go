package sqlstore

import (
	"context"
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

const (
	arrayColumns = `id, name, owner_user, owner_project, owner_domain, spec, count, max_running, created_ns`
	insertArray  = `INSERT INTO session_arrays (` + arrayColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	selectArray  = `SELECT ` + arrayColumns + ` FROM session_arrays WHERE id = $1`
	selectArrays = `SELECT ` + arrayColumns + ` FROM session_arrays
WHERE ($1 = '' OR owner_user = $1) AND ($2 = '' OR name = $2) AND ($3 = '' OR substr(id, 1, length($3)) = $3)
ORDER BY created_ns DESC, id DESC
LIMIT CAST($4 AS BIGINT)`
	selectArrayElements = `SELECT ` + codec.SessionColumns + ` FROM sessions WHERE array_id = $1
ORDER BY array_index, created_at, id`
	// A preempted attempt that was requeued gives way to its requeued
	// attempt, which carries its index on.
	selectArraySummaries = `SELECT e.array_id, e.status, e.outcome, e.preempted_by, count(*) FROM sessions e
WHERE e.array_id {in $1}
  AND e.id NOT IN (SELECT r.requeued_from FROM sessions r WHERE r.array_id {in $1} AND r.requeued_from <> '')
GROUP BY e.array_id, e.status, e.outcome, e.preempted_by`
	// What the %N cap needs of each capped array with a PENDING element
	// in the group: the cap, and how many elements hold resources.
	selectGroupArrays = `SELECT a.id, a.name, a.max_running,
  (SELECT count(*) FROM sessions m WHERE m.array_id = a.id
     AND m.status IN ` + holdingSessionStatuses + `)
FROM session_arrays a
WHERE a.max_running > 0
  AND EXISTS (SELECT 1 FROM sessions p WHERE p.array_id = a.id AND p.status = 'PENDING' AND p.resource_group = $1)`
)

func scanArray(sc codec.Scanner) (domain.Array, error) {
	var (
		a       domain.Array
		id      string
		created int64
	)
	if err := sc.Scan(&id, &a.Name, &a.Owner.User, &a.Owner.Project, &a.Owner.Domain, &a.Spec, &a.Count,
		&a.MaxRunning, &created); err != nil {
		return a, err
	}
	a.ID, a.CreatedAt = domain.ArrayID(id), fromNanos(created)
	return a, nil
}

// CreateArray implements store.Store: the array's row and every
// element's rows in one batch, after the name, limit and group checks
// CreateSession makes, counted for all the elements at once.
func (s *Store) CreateArray(ctx context.Context, a domain.Array, elements []store.NewSession, limits ...store.PendingLimit) error {
	if a.Name == "" || a.Count != len(elements) || a.Count < 1 || a.MaxRunning < 0 {
		return fmt.Errorf("%w: array needs a name, a max_running ≥ 0 and as many elements as its count (%d), not %d",
			store.ErrInvalid, a.Count, len(elements))
	}
	limits, err := lockOrder(limits)
	if err != nil {
		return err
	}
	stmts := make([]Stmt, 0, 1+2*len(elements))
	stmts = append(stmts, Stmt{SQL: insertArray, Args: []any{string(a.ID), a.Name, a.Owner.User, a.Owner.Project,
		a.Owner.Domain, a.Spec, a.Count, a.MaxRunning, unixNanos(a.CreatedAt)}})
	var groups []string
	for _, e := range elements {
		if e.Session.Array != a.ID || e.Session.Owner != a.Owner {
			return fmt.Errorf("%w: element %s does not belong to array %s", store.ErrInvalid, e.Session.ID, a.ID)
		}
		groups = append(groups, e.Session.ResourceGroup)
		if stmts, err = s.sessionStmts(stmts, e.Session, e.Kernels); err != nil {
			return err
		}
	}
	return s.write(ctx, "create array "+string(a.ID), func(tx txn) error {
		if err := s.checkName(ctx, tx, a.Owner.User, a.Name); err != nil {
			return err
		}
		if err := s.checkLimits(ctx, tx, limits, len(elements)); err != nil {
			return err
		}
		// In name order, as every other set of rows is locked.
		for _, g := range uniqueSorted(groups) {
			if err := s.checkGroupAdmits(ctx, tx, g); err != nil {
				return err
			}
		}
		return tx.batch(ctx, stmts...)
	})
}

// GetArray implements store.Store.
func (s *Store) GetArray(ctx context.Context, id domain.ArrayID) (domain.Array, error) {
	got, err := readAll(ctx, s, "get array "+string(id), selectArray, []any{string(id)}, scanArray)
	if err != nil {
		return domain.Array{}, err
	}
	if len(got) == 0 {
		return domain.Array{}, fmt.Errorf("array %s: %w", id, store.ErrNotFound)
	}
	return got[0], nil
}

// ListArrays implements store.Store.
func (s *Store) ListArrays(ctx context.Context, f store.ArrayFilter) ([]domain.Array, error) {
	return readAll(ctx, s, "list arrays", selectArrays, []any{f.User, f.Name, f.IDPrefix, limit(f.Limit)}, scanArray)
}

// ArrayElements implements store.Store.
func (s *Store) ArrayElements(ctx context.Context, id domain.ArrayID) ([]domain.Session, error) {
	return readAll(ctx, s, "elements of array "+string(id), selectArrayElements, []any{string(id)},
		func(sc codec.Scanner) (domain.Session, error) { return codec.ScanSession(s.reg, sc) })
}

// ArraySummaries implements store.Store.
func (s *Store) ArraySummaries(ctx context.Context, ids []domain.ArrayID) (map[domain.ArrayID]domain.ArraySummary, error) {
	out := make(map[domain.ArrayID]domain.ArraySummary, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := s.read(ctx, "summarise arrays", func(tx txn) error {
		return tx.query(ctx, selectArraySummaries, []any{List(codec.Strings(ids))}, func(sc codec.Scanner) error {
			var id, status, outcome, preemptedBy string
			var n int
			if err := sc.Scan(&id, &status, &outcome, &preemptedBy, &n); err != nil {
				return err
			}
			st, err := domain.ParseSessionStatus(status)
			if err != nil {
				return codec.Corrupt("sessions", id, "status", err)
			}
			o, err := domain.ParseOutcome(outcome)
			if err != nil {
				return codec.Corrupt("sessions", id, "outcome", err)
			}
			if preemptedBy != "" && o == domain.OutcomeFailure {
				o = domain.OutcomePreempted // stored as failure: see migration 00110
			}
			sum, ok := out[domain.ArrayID(id)]
			if !ok {
				sum = domain.ArraySummary{ByStatus: map[domain.SessionStatus]int{}, ByOutcome: map[domain.Outcome]int{}}
				out[domain.ArrayID(id)] = sum
			}
			sum.ByStatus[st] += n
			sum.ByOutcome[o] += n
			return nil
		})
	})
	return out, err
}

// groupArraysStmt reads the caps of the group's capped arrays into
// snap.Arrays; LoadSnapshot runs it in its batch.
func groupArraysStmt(group string, snap *framework.Snapshot) Stmt {
	return Stmt{SQL: selectGroupArrays, Args: []any{group}, Row: func(sc codec.Scanner) error {
		var id string
		var a framework.ArrayInfo
		if err := sc.Scan(&id, &a.Name, &a.MaxRunning, &a.Running); err != nil {
			return err
		}
		if snap.Arrays == nil {
			snap.Arrays = map[domain.ArrayID]framework.ArrayInfo{}
		}
		snap.Arrays[domain.ArrayID(id)] = a
		return nil
	}}
}
