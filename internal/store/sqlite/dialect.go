package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
	"github.com/sokovan-go/sokovan/internal/store/sqlstore"
)

// dialect: lists and row sets travel as one JSON array parameter, read
// with json_each, so every statement's text stays fixed however long the
// list and SQLite's limit on variables never applies. The feed position is
// the row's seq: with one writer at a time, rows commit in seq order, so a
// reader never passes a gap that fills later. Times are stored in
// microseconds already.
var dialect = sqlstore.Dialect{
	Param:     "?%d",
	InList:    "IN (SELECT value FROM json_each(%s))",
	NotInList: "NOT IN (SELECT value FROM json_each(%s))",
	EmptyList: "%s = '[]'",
	RowSet:    rowSet,
	JSONPairs: "json_each(%s)",
	RowLock:   "",
	ShareLock: "",
	ChangePos: "seq",
	Micros:    "%s",
}

// rowSet reads a JSON array of rows, each an array of the columns; a set
// of one column is a plain array (see encodeRows).
func rowSet(first int, alias string, cols []sqlstore.Column) string {
	var b strings.Builder
	b.WriteString("(SELECT ")
	for i, c := range cols {
		if len(cols) == 1 {
			fmt.Fprintf(&b, "value AS %s, ", c.Name)
		} else {
			fmt.Fprintf(&b, "value ->> %d AS %s, ", i, c.Name)
		}
	}
	fmt.Fprintf(&b, "key AS n FROM json_each(?%d)) AS %s", first, alias)
	return b.String()
}

// liteTx is a sqlstore.Tx over database/sql.
type liteTx struct {
	tx    *sql.Tx
	stmts *stmtCache
}

func (t liteTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if st := t.stmts.get(query); st != nil {
		res, err = t.tx.StmtContext(ctx, st).ExecContext(ctx, encode(args)...)
	} else {
		res, err = t.tx.ExecContext(ctx, query, encode(args)...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t liteTx) Query(ctx context.Context, query string, args []any, row func(codec.Scanner) error) error {
	var rows *sql.Rows
	var err error
	if st := t.stmts.get(query); st != nil {
		rows, err = t.tx.StmtContext(ctx, st).QueryContext(ctx, encode(args)...)
	} else {
		rows, err = t.tx.QueryContext(ctx, query, encode(args)...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (t liteTx) QueryRow(ctx context.Context, query string, args ...any) codec.Scanner {
	if st := t.stmts.get(query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, encode(args)...)
	}
	return t.tx.QueryRowContext(ctx, query, encode(args)...)
}

// Batch runs the statements one after the other: the database is in
// process, so there is no round trip to save.
func (t liteTx) Batch(ctx context.Context, stmts []sqlstore.Stmt) error {
	for _, st := range stmts {
		var err error
		if st.Row == nil {
			_, err = t.Exec(ctx, st.SQL, st.Args...)
		} else {
			err = t.Query(ctx, st.SQL, st.Args, st.Row)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (t liteTx) Commit(context.Context) error   { return t.tx.Commit() }
func (t liteTx) Rollback(context.Context) error { return t.tx.Rollback() }

// encode turns the store's arguments into the driver's: lists and row sets
// into JSON text, times into microseconds since the Unix epoch (the
// schema's INTEGER times).
func encode(args []any) []any {
	var out []any
	for i, a := range args {
		var v any
		switch a := a.(type) {
		case sqlstore.List:
			v = encodeList(a)
		case sqlstore.Rows:
			v = encodeRows(a)
		case time.Time:
			v = micros(a)
		default:
			continue
		}
		if out == nil {
			out = append(make([]any, 0, len(args)), args...)
		}
		out[i] = v
	}
	if out == nil {
		return args
	}
	return out
}

func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func encodeList(l sqlstore.List) string {
	if len(l) == 0 {
		return "[]"
	}
	return encodeRows(sqlstore.Rows{[]string(l)})
}

// encodeRows writes a JSON array with one element per row: the value
// itself for a set of one column, else an array of the row's values.
func encodeRows(r sqlstore.Rows) string {
	n := r.Len()
	b := make([]byte, 0, 16+n*len(r)*24)
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if len(r) > 1 {
			b = append(b, '[')
		}
		for j, col := range r {
			if j > 0 {
				b = append(b, ',')
			}
			switch c := col.(type) {
			case []string:
				b = appendString(b, c[i])
			case []int32:
				b = strconv.AppendInt(b, int64(c[i]), 10)
			case []int64:
				b = strconv.AppendInt(b, c[i], 10)
			case []time.Time:
				b = strconv.AppendInt(b, c[i].UnixMicro(), 10)
			case []float64:
				b = strconv.AppendFloat(b, c[i], 'g', -1, 64)
			}
		}
		if len(r) > 1 {
			b = append(b, ']')
		}
	}
	return string(append(b, ']'))
}

// appendString writes s as a JSON string. Bytes other than quotes,
// backslashes and control characters pass as they are, so what SQLite
// reads back is s, byte for byte.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
