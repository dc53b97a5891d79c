package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"time"

	"github.com/pressly/goose/v3"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options configure Open.
type Options struct {
	// Registry converts stored slot names to vector indexes. Required.
	Registry *domain.Registry
	// BusyTimeout is how long a write waits for another process's write
	// lock before giving up with store.ErrUnavailable; zero means 10s.
	BusyTimeout time.Duration
	// Readers is the number of read connections; zero means 4.
	Readers int
	// Fault is for tests only; see store.FaultHook.
	Fault store.FaultHook
}

// Store is a store.Store over one SQLite file.
type Store struct {
	reg   *domain.Registry
	w     *sql.DB // exactly one connection; every transaction is BEGIN IMMEDIATE
	r     *sql.DB // query_only connections; transactions are plain BEGIN
	fault store.FaultHook
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path and brings its
// schema up to date. An in-memory database is not supported: the reader and
// writer connections must see the same file.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.Registry == nil {
		return nil, fmt.Errorf("sqlite: open: %w: a slot registry is required", store.ErrInvalid)
	}
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("sqlite: open: %w: a database file path is required", store.ErrInvalid)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	readers := opts.Readers
	if readers <= 0 {
		readers = 4
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	// FULL syncs the WAL on every commit: a committed session survives a
	// power cut, not only a crash of the process.
	q.Add("_pragma", "synchronous(FULL)")
	wq := url.Values{}
	for k, v := range q {
		wq[k] = append([]string(nil), v...)
	}
	wq.Add("_pragma", "journal_mode(WAL)")
	wq.Set("_txlock", "immediate")
	rq := q // q is not used again
	rq.Add("_pragma", "query_only(1)")

	w, err := sql.Open("sqlite", path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w: %v", store.ErrUnavailable, err)
	}
	w.SetMaxOpenConns(1)
	s := &Store{reg: opts.Registry, w: w, fault: opts.Fault}
	// The writer connection is opened first: it switches the file to WAL.
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open: %w: %v", store.ErrUnavailable, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s.r = r
	return s, nil
}

// migrate applies the embedded migrations. SQLite has no advisory locks;
// two processes opening the same new file at once are not supported.
func migrate(ctx context.Context, db *sql.DB) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub,
		goose.WithDisableGlobalRegistry(true), goose.WithLogger(goose.NopLogger()))
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("sqlite: migrate: %w: %v", store.ErrUnavailable, err)
	}
	return nil
}

// Close closes both connection pools.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// write runs fn in one write transaction, committing when it returns nil.
// database/sql rolls the transaction back if ctx ends first.
func (s *Store) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return classify(ctx, op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // the error that matters is fn's
		return classify(ctx, op, err)
	}
	if err := tx.Commit(); err != nil {
		return classify(ctx, op, err)
	}
	return nil
}

// read runs fn in one read transaction, so all its queries see the same
// committed state.
func (s *Store) read(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return classify(ctx, op, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep or lose
	if err := fn(tx); err != nil {
		return classify(ctx, op, err)
	}
	return nil
}

func (s *Store) hook(point string) error {
	if s.fault == nil {
		return nil
	}
	return s.fault(point)
}

// classify turns a driver error into one of store's classes. Errors that
// already carry a store class or come from the context pass through.
func classify(ctx context.Context, op string, err error) error {
	for _, known := range []error{store.ErrNotFound, store.ErrConflict, store.ErrGuardFailed,
		store.ErrInvalid, store.ErrCorrupt, store.ErrUnavailable, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, known) {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w: a row with the same key exists", op, store.ErrConflict)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%s: %w: it refers to a row that does not exist", op, store.ErrNotFound)
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE:
			return fmt.Errorf("%s: %w: the schema refuses the value", op, store.ErrInvalid)
		case sqlite3.SQLITE_INTERRUPT:
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", op, ctx.Err())
			}
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w: %v", op, store.ErrUnavailable, err)
}

// ts stores a time as microseconds since the Unix epoch, the zero time as
// NULL.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// jsonList passes a list to SQL as a JSON array, read there with
// json_each; this keeps every statement's text fixed however long the list.
func jsonList(items []string) string {
	if len(items) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(items) // a list of strings always marshals
	return string(b)
}
