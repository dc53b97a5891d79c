package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
	"github.com/sokovan-go/sokovan/internal/store/sqlstore"
)

// dialect: the store's query text is PostgreSQL's already; lists travel as
// arrays, row sets as one array per column, unnest'ed together. Rows that
// will be written are locked FOR NO KEY UPDATE, which does not block
// inserts that merely reference them. The feed position is pos, given
// after commit (see NumberChanges).
var dialect = sqlstore.Dialect{
	Param:     "$%d",
	InList:    "= ANY(%s)",
	NotInList: "<> ALL(%s)",
	EmptyList: "cardinality(%s::text[]) = 0",
	RowSet:    rowSet,
	JSONPairs: "LATERAL jsonb_each_text(%s)",
	RowLock:   "FOR NO KEY UPDATE",
	ShareLock: "FOR SHARE",
	ChangePos: "pos",
	// EXTRACT gives numeric, exact to the microsecond TIMESTAMPTZ keeps.
	Micros: "CAST(EXTRACT(EPOCH FROM %s) * 1000000 AS BIGINT)",
}

func rowSet(first int, alias string, cols []sqlstore.Column) string {
	arrays, names := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		arrays[i] = fmt.Sprintf("$%d::%s[]", first+i, c.Type)
		names[i] = c.Name
	}
	return fmt.Sprintf("unnest(%s) WITH ORDINALITY AS %s(%s, n)",
		strings.Join(arrays, ", "), alias, strings.Join(names, ", "))
}

// pgTx is a sqlstore.Tx over a pgx transaction.
type pgTx struct{ tx pgx.Tx }

func (t pgTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, query, encode(args)...)
	return tag.RowsAffected(), err
}

func (t pgTx) Query(ctx context.Context, query string, args []any, row func(codec.Scanner) error) error {
	rows, err := t.tx.Query(ctx, query, encode(args)...)
	if err != nil {
		return err
	}
	return each(rows, row)
}

func (t pgTx) QueryRow(ctx context.Context, query string, args ...any) codec.Scanner {
	return t.tx.QueryRow(ctx, query, encode(args)...)
}

// Batch sends the statements in one round trip.
func (t pgTx) Batch(ctx context.Context, stmts []sqlstore.Stmt) error {
	b := &pgx.Batch{}
	for _, st := range stmts {
		q := b.Queue(st.SQL, encode(st.Args)...)
		if row := st.Row; row != nil {
			q.Query(func(rows pgx.Rows) error { return each(rows, row) })
		}
	}
	return t.tx.SendBatch(ctx, b).Close()
}

// Commit waits for the server's answer even if ctx ends meanwhile. Were
// it to give up on a COMMIT already sent, the server could still commit
// after the caller was told the deadline passed, and the caller would not
// know its writes landed; a SQLite transaction never leaves that doubt.
// commitWait bounds the wait for a server that stopped answering. A ctx
// that ended before COMMIT was sent ends the transaction unsent.
func (t pgTx) Commit(ctx context.Context) error {
	if ctx.Err() != nil {
		return t.tx.Commit(ctx)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitWait)
	defer cancel()
	return t.tx.Commit(ctx)
}

// commitWait is how long Commit waits for the server past the caller's
// deadline.
const commitWait = 10 * time.Second

// Rollback: with ctx done, pgx cannot send ROLLBACK and closes the
// connection instead; the server then rolls back.
func (t pgTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

func each(rows pgx.Rows, fn func(codec.Scanner) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// encode turns the store's arguments into pgx's: a list into a text array
// (empty, not NULL, when it has nothing, so {empty $n} holds), a row set
// into one array per column.
func encode(args []any) []any {
	var out []any
	for i, a := range args {
		switch a := a.(type) {
		case sqlstore.List:
			if out == nil {
				out = append(make([]any, 0, len(args)), args[:i]...)
			}
			list := []string(a)
			if list == nil {
				list = []string{}
			}
			out = append(out, list)
		case sqlstore.Rows:
			if out == nil {
				out = append(make([]any, 0, len(args)+len(a)), args[:i]...)
			}
			out = append(out, a...)
		default:
			if out != nil {
				out = append(out, a)
			}
		}
	}
	if out == nil {
		return args
	}
	return out
}
