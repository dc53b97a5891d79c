package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// Engine is one database as the shared store uses it: transactions, and
// how the database's errors read.
type Engine interface {
	// Begin starts a transaction. A Write one excludes, for as long as it
	// lasts, any other writer from the rows it reads under a lock (see
	// Dialect.RowLock); a Read one sees one committed state throughout.
	Begin(ctx context.Context, access Access) (Tx, error)
	// Classify returns the store error class (store.ErrConflict, …) that a
	// driver error stands for, wrapped with a short reason, or nil when it
	// does not recognize the error; the store then reports ErrUnavailable.
	Classify(err error) error
	// Retryable reports whether a write transaction that failed with err may
	// run again from the start, as one that lost a serialization or
	// deadlock race may.
	Retryable(err error) bool
	Close() error
}

// SoleWriter is an Engine whose database no other process writes (a
// Scratch SQLite file, held under an exclusive lock). The store then knows
// from its own commits when the change feed cannot have moved, and
// answers a read of the feed past its known end without a query: a
// simulation reads it several times a cycle, most often finding nothing.
type SoleWriter interface {
	SoleWriter() bool
}

// ChangeNumberer is an Engine whose change feed rows get their position
// only after they commit. The store calls NumberChanges, in a write
// transaction of its own, before every read of the feed.
type ChangeNumberer interface {
	NumberChanges(ctx context.Context, tx Tx) error
}

// KeyLocker is an Engine whose write transactions exclude each other only
// where they lock the same rows. KeyLock returns a statement, in the
// store's query text, that locks key until the transaction ends, so writers
// that decide on a count of rows no one locks (rows that may yet be
// inserted) can queue on it. An engine without it runs one write
// transaction at a time, which excludes them already.
type KeyLocker interface {
	KeyLock(key string) Stmt
}

// Access says what a transaction may do.
type Access int

// Transaction access modes.
const (
	Read Access = iota
	Write
)

// Tx is one transaction of an Engine. Query text reaches it already in
// the engine's dialect; arguments may include List and Rows values and
// times (time.Time), which the engine encodes its own way.
type Tx interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query and hands each row to row, stopping at the first
	// error.
	Query(ctx context.Context, query string, args []any, row func(codec.Scanner) error) error
	// QueryRow runs a query for one row; its Scan reports sql.ErrNoRows
	// (or an error that is one) when there is none.
	QueryRow(ctx context.Context, query string, args ...any) codec.Scanner
	// Batch runs the statements in order and stops at the first error. An
	// engine may send them in one round trip, so a statement's arguments
	// cannot depend on an earlier one's rows.
	Batch(ctx context.Context, stmts []Stmt) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Stmt is one statement of a Batch. Row, when set, receives each row the
// statement returns; when nil, the statement's rows are not read.
type Stmt struct {
	SQL  string
	Args []any
	Row  func(codec.Scanner) error
}

// List is a list parameter: SQLite receives it as one JSON array,
// PostgreSQL as one text array. Query text reads it with {in $n},
// {not in $n} or {empty $n}, or as a one-column {rows $n …}.
type List []string

// Rows is a set of rows passed as parameters, one column after the other:
// each element is a []string, []int32, []int64 or []time.Time, all of one
// length. PostgreSQL receives each column as one array parameter, SQLite
// the whole set as one JSON array of rows, so a Rows of more than one
// column must be its statement's last argument. Query text reads it with
// {rows $n alias(column type, …)}.
type Rows []any

// Len returns the number of rows.
func (r Rows) Len() int {
	if len(r) == 0 {
		return 0
	}
	switch c := r[0].(type) {
	case []string:
		return len(c)
	case []int32:
		return len(c)
	case []int64:
		return len(c)
	case []time.Time:
		return len(c)
	}
	panic(fmt.Sprintf("sqlstore: a Rows column of type %T", r[0]))
}
