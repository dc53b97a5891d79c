package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/sqlstore"
)

// Open opens (creating if needed) the database file at path and brings its
// schema up to date. An in-memory database is not supported: the reader and
// writer connections must see the same file (and a Scratch store's one
// connection, were it lost, would take the data with it).
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	switch {
	case opts.Registry == nil:
		return nil, fmt.Errorf("sqlite: open: %w: a slot registry is required", store.ErrInvalid)
	case path == "" || path == ":memory:":
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
	if opts.Scratch {
		q.Add("_pragma", "synchronous(OFF)")
	} else {
		q.Add("_pragma", "synchronous(FULL)")
	}
	wq := url.Values{}
	for k, v := range q {
		wq[k] = append([]string(nil), v...)
	}
	if opts.Scratch {
		wq.Add("_pragma", "journal_mode(MEMORY)")
	} else {
		wq.Add("_pragma", "journal_mode(WAL)")
	}
	wq.Set("_txlock", "immediate")
	if opts.Scratch {
		// 256 MiB of pages: a simulation's database, whole.
		wq.Add("_pragma", "locking_mode(EXCLUSIVE)")
		wq.Add("_pragma", "cache_size(-262144)")
	}
	rq := q // q is not used again
	rq.Add("_pragma", "query_only(1)")

	w, err := sql.Open("sqlite", path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w: %v", store.ErrUnavailable, err)
	}
	w.SetMaxOpenConns(1)
	// The writer connection is opened first: it switches the file to WAL.
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, err
	}
	if opts.Scratch {
		// Reads take the one connection too (as BEGIN IMMEDIATE, which
		// the exclusive lock makes free): its cache stays valid across
		// writes, where a second connection's would be dropped after
		// each.
		e := &engine{w: w, r: w, wc: newStmtCache(w), sole: true}
		e.rc = e.wc
		return &Store{sqlstore.New(opts.Registry, e, dialect, opts.Fault)}, nil
	}
	r, err := sql.Open("sqlite", path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open: %w: %v", store.ErrUnavailable, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	e := &engine{w: w, r: r, wc: newStmtCache(w), rc: newStmtCache(r)}
	return &Store{sqlstore.New(opts.Registry, e, dialect, opts.Fault)}, nil
}

// migrate applies the migrations, rendered for SQLite. SQLite has no
// advisory locks; two processes opening the same new file at once are not
// supported.
func migrate(ctx context.Context, db *sql.DB) error {
	if err := sqlstore.Migrate(ctx, db, sqlstore.SQLite); err != nil {
		return fmt.Errorf("sqlite: migrate: %w: %v", store.ErrUnavailable, err)
	}
	return nil
}

// Store is a store.Store over one SQLite file.
type Store struct {
	*sqlstore.Store
}

// engine is the sqlstore.Engine of one file. Writes are serialized twice
// over: within the process by the single writer connection, across
// processes by BEGIN IMMEDIATE (the _txlock of w), which takes the
// database's one write lock at the first statement; so rows read in a write
// transaction cannot change before it commits, and no row locks are
// needed.
type engine struct {
	// sole: a Scratch file, which no other process opens.
	sole bool
	w    *sql.DB // exactly one connection; every transaction is BEGIN IMMEDIATE
	r    *sql.DB // query_only connections; transactions are plain BEGIN (a Scratch store's: w)
	// wc and rc are their prepared statements.
	wc, rc *stmtCache
}

// Begin starts a transaction. database/sql rolls it back if ctx ends
// first.
func (e *engine) Begin(ctx context.Context, access sqlstore.Access) (sqlstore.Tx, error) {
	if access == sqlstore.Write {
		e.wc.prepare(ctx)
		return begun(e.w.BeginTx(ctx, nil))(e.wc)
	}
	e.rc.prepare(ctx)
	return begun(e.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}))(e.rc)
}

func begun(tx *sql.Tx, err error) func(*stmtCache) (sqlstore.Tx, error) {
	return func(c *stmtCache) (sqlstore.Tx, error) {
		if err != nil {
			return nil, err
		}
		return liteTx{tx: tx, stmts: c}, nil
	}
}

// Classify names the constraint failures; anything else, SQLITE_BUSY after
// the busy timeout included, is the store's ErrUnavailable.
func (e *engine) Classify(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return sqlstore.ErrKeyExists
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return sqlstore.ErrMissingRow
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE:
		return sqlstore.ErrSchemaValue
	}
	return nil
}

// Retryable is false: with one writer at a time no transaction loses a
// race, and a busy database has already been waited for (BusyTimeout).
func (e *engine) Retryable(error) bool { return false }

// SoleWriter: see sqlstore.SoleWriter.
func (e *engine) SoleWriter() bool { return e.sole }

// Close closes both connection pools.
func (e *engine) Close() error {
	if e.r == e.w {
		e.wc.close()
		return e.w.Close()
	}
	e.rc.close()
	e.wc.close()
	return errors.Join(e.r.Close(), e.w.Close())
}

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
	// Scratch is for a database that only this process opens and that
	// nothing needs once it ends (the simulator's): one connection serves
	// reads and writes and holds the file exclusively, with a large page
	// cache that no other connection's write invalidates; the rollback
	// journal is kept in memory and commits are not synced. A crash may
	// leave the file unusable, and another store cannot open it. Never for
	// a manager's database.
	Scratch bool
}
