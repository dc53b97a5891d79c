package sqlstore

import (
	"fmt"
	"strings"
)

// Column is one column of a {rows …} set: its name and its PostgreSQL
// type, which PostgreSQL needs to read an array parameter and SQLite
// ignores (a JSON value carries its type).
type Column struct {
	Name, Type string
}

// Dialect is how an engine's SQL differs from the query text the store is
// written in: PostgreSQL's, with numbered $n parameters, plus these
// fragments in braces.
//
//	{in $n}, {not in $n}  after an expression: whether it is in list $n
//	{empty $n}            whether list $n is empty
//	{rows $n u(c t, …)}   a FROM item: the rows of Rows $n as table u with
//	                      columns c…, plus n, each row's place in the set
//	{pairs expr}          a FROM item: the key and value (text) of each
//	                      member of the stored JSON object expr
//	{lock}                after a SELECT: lock the rows it returns
//	{share}               after a SELECT: lock the rows it returns against
//	                      writers only, so readers that share do not queue
//	{pos}                 the change feed's position column
//	{micros expr}         expr, a stored time, as integer microseconds
//	                      since the Unix epoch (for arithmetic on times)
//
// Each string field is a format with the one %s its fragment takes.
type Dialect struct {
	// Param writes parameter n: "$%d" or "?%d".
	Param     string
	InList    string
	NotInList string
	EmptyList string
	// RowSet writes {rows}; first is the number of its first parameter.
	RowSet    func(first int, alias string, cols []Column) string
	JSONPairs string
	// RowLock is the clause that locks a SELECT's rows until commit, empty
	// where a write transaction already excludes every other writer.
	// Statements that only lock are skipped where it is empty.
	RowLock string
	// ShareLock is RowLock's shared form: it keeps the rows from changing
	// until commit without excluding others that share them.
	ShareLock string
	ChangePos string
	Micros    string
}

// param writes parameter n in the dialect.
func (d Dialect) param(n int) string { return fmt.Sprintf(d.Param, n) }

// render turns query text as the store writes it into the dialect's. It
// panics on a malformed fragment: query texts are constants of this
// package, and the conformance suite runs every one of them.
func (d Dialect) render(q string) string {
	var b strings.Builder
	b.Grow(len(q) + len(q)/4)
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '\'':
			// A string literal is copied as it is: SQLite's JSON paths
			// ('$[0]') hold dollars that are not parameters.
			end := i + 1
			for end < len(q) && q[end] != '\'' {
				end++
			}
			b.WriteString(q[i:min(end+1, len(q))])
			i = end + 1
		case c == '$' && i+1 < len(q) && isDigit(q[i+1]):
			n, end := number(q, i+1)
			b.WriteString(d.param(n))
			i = end
		case c == '{':
			end := strings.IndexByte(q[i:], '}')
			if end < 0 {
				panic(fmt.Sprintf("sqlstore: unclosed fragment in %q", q))
			}
			b.WriteString(d.fragment(q[i+1:i+end], q))
			i += end + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func (d Dialect) fragment(f, q string) string {
	bad := func() string { panic(fmt.Sprintf("sqlstore: bad fragment {%s} in %q", f, q)) }
	name, rest, _ := strings.Cut(f, " ")
	param := func(s string) int {
		if len(s) < 2 || s[0] != '$' {
			bad()
		}
		n, end := number(s, 1)
		if end != len(s) {
			bad()
		}
		return n
	}
	switch name {
	case "in":
		return fmt.Sprintf(d.InList, d.param(param(rest)))
	case "not":
		p, ok := strings.CutPrefix(rest, "in ")
		if !ok {
			bad()
		}
		return fmt.Sprintf(d.NotInList, d.param(param(p)))
	case "empty":
		return fmt.Sprintf(d.EmptyList, d.param(param(rest)))
	case "pairs":
		return fmt.Sprintf(d.JSONPairs, rest)
	case "lock":
		return d.RowLock
	case "share":
		return d.ShareLock
	case "pos":
		return d.ChangePos
	case "micros":
		return fmt.Sprintf(d.Micros, rest)
	case "rows":
		p, set, _ := strings.Cut(rest, " ")
		alias, cols, ok := strings.Cut(strings.TrimSuffix(set, ")"), "(")
		if !ok || !strings.HasSuffix(set, ")") {
			bad()
		}
		var columns []Column
		for _, c := range strings.Split(cols, ",") {
			name, typ, ok := strings.Cut(strings.TrimSpace(c), " ")
			if !ok {
				bad()
			}
			columns = append(columns, Column{Name: name, Type: typ})
		}
		return d.RowSet(param(p), alias, columns)
	}
	return bad()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads the decimal number at s[i:] and returns it and where it
// ends.
func number(s string, i int) (int, int) {
	n := 0
	for ; i < len(s) && isDigit(s[i]); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n, i
}
