package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// Store is a store.Store over one Engine.
type Store struct {
	reg     *domain.Registry
	eng     Engine
	dialect Dialect
	fault   store.FaultHook
	// texts maps query text as written here to the dialect's, rendered on
	// first use.
	texts sync.Map
	// agents decodes the agent rows of snapshots and listings.
	agents *codec.AgentDecoder
	// cache is the cluster's part of LoadSnapshot (snapcache.go).
	cache *snapCache
	// sole: no other process writes the database (SoleWriter); writes
	// counts this store's write transactions once each has ended, and
	// tail is the feed's end as a read found it (changes.go).
	sole   bool
	writes atomic.Uint64
	tail   feedTail
}

var _ store.Store = (*Store)(nil)

// What engines' Classify returns for the constraint failures every schema
// has, so both engines describe them alike.
var (
	ErrKeyExists   = fmt.Errorf("%w: a row with the same key exists", store.ErrConflict)
	ErrMissingRow  = fmt.Errorf("%w: it refers to a row that does not exist", store.ErrNotFound)
	ErrSchemaValue = fmt.Errorf("%w: the schema refuses the value", store.ErrInvalid)
)

// maxAttempts bounds the runs of a write transaction that keeps losing
// serialization or deadlock races.
const maxAttempts = 5

// New returns a store over eng, whose SQL is d. reg converts stored slot
// names to vector indexes; fault is for tests only (see store.FaultHook).
func New(reg *domain.Registry, eng Engine, d Dialect, fault store.FaultHook) *Store {
	sw, ok := eng.(SoleWriter)
	return &Store{reg: reg, eng: eng, dialect: d, fault: fault, agents: codec.NewAgentDecoder(reg),
		cache: newSnapCache(), sole: ok && sw.SoleWriter()}
}

// Close closes the engine.
func (s *Store) Close() error { return s.eng.Close() }

// write runs fn in one write transaction, committing when it returns nil,
// and runs it again from the start when the engine says the failure was a
// lost race; fn must therefore read everything it decides on inside the
// transaction, and reset what it collects.
func (s *Store) write(ctx context.Context, op string, fn func(tx txn) error) error {
	var err error
	for range maxAttempts {
		if err = s.attempt(ctx, Write, fn); err == nil || !s.eng.Retryable(err) || ctx.Err() != nil {
			break
		}
	}
	return s.classify(ctx, op, err)
}

// read runs fn in one read transaction, so all its queries see the same
// committed state.
func (s *Store) read(ctx context.Context, op string, fn func(tx txn) error) error {
	return s.classify(ctx, op, s.attempt(ctx, Read, fn))
}

func (s *Store) attempt(ctx context.Context, access Access, fn func(tx txn) error) error {
	if access == Write {
		// Counted once it has ended, committed or not: a feed read that
		// began before then may have missed what it wrote (changes.go).
		defer s.writes.Add(1)
	}
	tx, err := s.eng.Begin(ctx, access)
	if err != nil {
		return err
	}
	if err := fn(txn{s: s, tx: tx}); err != nil {
		_ = tx.Rollback(ctx) // the error that matters is fn's
		return err
	}
	return tx.Commit(ctx)
}

func (s *Store) hook(point string) error {
	if s.fault == nil {
		return nil
	}
	return s.fault(point)
}

// classify turns an error into one of store's classes. Errors that already
// carry a class or come from the context pass through.
func (s *Store) classify(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	for _, known := range []error{store.ErrNotFound, store.ErrConflict, store.ErrGuardFailed,
		store.ErrInvalid, store.ErrCorrupt, store.ErrLimitReached, store.ErrUnavailable, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, known) {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	if class := s.eng.Classify(err); class != nil {
		return fmt.Errorf("%s: %w", op, class)
	}
	// A statement the driver interrupted because ctx ended reports it here.
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w: %v", op, store.ErrUnavailable, err)
}

// sql returns query text in the engine's dialect.
func (s *Store) sql(q string) string {
	if t, ok := s.texts.Load(q); ok {
		return t.(string)
	}
	t := s.dialect.render(q)
	s.texts.Store(q, t)
	return t
}

// txn is a transaction as the store's methods use it: query text as this
// package writes it, and the checks every engine makes the same way.
type txn struct {
	s  *Store
	tx Tx
}

func (t txn) exec(ctx context.Context, query string, args ...any) (int64, error) {
	return t.tx.Exec(ctx, t.s.sql(query), args...)
}

// query runs a query and hands each row to fn, stopping at the first
// error.
func (t txn) query(ctx context.Context, query string, args []any, fn func(codec.Scanner) error) error {
	return t.tx.Query(ctx, t.s.sql(query), args, fn)
}

func (t txn) queryRow(ctx context.Context, query string, args ...any) codec.Scanner {
	return t.tx.QueryRow(ctx, t.s.sql(query), args...)
}

// queryAll runs a query and returns its rows, each read by scan; the
// slice is made afresh, so a transaction run again keeps no row of an
// earlier attempt.
func queryAll[T any](ctx context.Context, t txn, query string, args []any, scan func(codec.Scanner) (T, error)) ([]T, error) {
	var out []T
	err := t.query(ctx, query, args, func(sc codec.Scanner) error {
		v, err := scan(sc)
		out = append(out, v)
		return err
	})
	return out, err
}

// readAll is queryAll in a read transaction of its own; nil on an error.
func readAll[T any](ctx context.Context, s *Store, op, query string, args []any, scan func(codec.Scanner) (T, error)) ([]T, error) {
	var out []T
	err := s.read(ctx, op, func(tx txn) error {
		var err error
		out, err = queryAll(ctx, tx, query, args, scan)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// deleteBefore runs a pruning statement that takes one time and returns
// how many rows it deleted.
func (s *Store) deleteBefore(ctx context.Context, op, query string, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, op, func(tx txn) error {
		var err error
		n, err = tx.exec(ctx, query, ts(before))
		return err
	})
	return n, err
}

// checkNameFree refuses with taken a name that a live row of the kind
// (session, deployment) of user already has, as count counts them. Where
// write transactions do not exclude each other (KeyLocker), it first
// locks the name, so two creations of it are serialised and the second
// sees the first.
func (s *Store) checkNameFree(ctx context.Context, tx txn, kind, count, user, name string, taken error) error {
	var stmts []Stmt
	if locker, ok := s.eng.(KeyLocker); ok {
		stmts = append(stmts, locker.KeyLock(kind+" name "+user+" "+name))
	}
	var n int64
	stmts = append(stmts, Stmt{SQL: count, Args: []any{user, name},
		Row: func(sc codec.Scanner) error { return sc.Scan(&n) }})
	if err := tx.batch(ctx, stmts...); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%s name %q of %s: %w", kind, name, user, taken)
	}
	return nil
}

// batch runs statements in order, in one round trip where the engine can.
func (t txn) batch(ctx context.Context, stmts ...Stmt) error {
	for i := range stmts {
		stmts[i].SQL = t.s.sql(stmts[i].SQL)
	}
	return t.tx.Batch(ctx, stmts)
}

// lock runs a statement whose only purpose is to lock rows a later one
// relies on. Where write transactions exclude every other writer anyway
// (no RowLock), it is not run at all.
func (t txn) lock(ctx context.Context, query string, args ...any) error {
	if t.s.dialect.RowLock == "" {
		return nil
	}
	_, err := t.exec(ctx, query, args...)
	return err
}

// execOne runs a statement that must change exactly one row; none means
// the row does not exist.
func (t txn) execOne(ctx context.Context, query string, args ...any) error {
	n, err := t.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// execN runs a statement that must change exactly n rows: the rows were
// checked under their locks, so any other count is a bug.
func (t txn) execN(ctx context.Context, n int, query string, args ...any) error {
	got, err := t.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if got != int64(n) {
		return fmt.Errorf("%w: changed %d rows, expected %d", codec.ErrInconsistent, got, n)
	}
	return nil
}

// ts passes the zero time as NULL and every other time in UTC; the engine
// stores it its own way.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// noLimit stands for "no LIMIT" in a LIMIT $n both engines accept.
//
// Every LIMIT parameter is written CAST($n AS BIGINT): SQLite (3.47 on)
// lets the planner read a bare LIMIT parameter's value, and then marks the
// statement to be compiled again whenever that parameter is bound, so
// each execution of a cached statement parsed and planned it afresh (a
// third of a change-feed read's cost). The cast keeps the value out of
// the planner, as before 3.47; PostgreSQL reads it the same either way.
const noLimit = int64(1<<63 - 1)

func limit(n int) int64 {
	if n <= 0 {
		return noLimit
	}
	return int64(n)
}
