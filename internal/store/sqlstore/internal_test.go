package sqlstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// The SQL spells out which statuses hold resources; they must be the
// domain's.
func TestHoldingStatusesMatchDomain(t *testing.T) {
	var kernels, sessions []string
	for _, s := range domain.KernelStatuses() {
		if s.HoldsResources() {
			kernels = append(kernels, "'"+s.String()+"'")
		}
	}
	for _, s := range domain.SessionStatuses() {
		if s.HoldsResources() {
			sessions = append(sessions, "'"+s.String()+"'")
		}
	}
	if want := "(" + strings.Join(kernels, ", ") + ")"; holdingKernelStatuses != want {
		t.Errorf("holdingKernelStatuses = %s, want %s", holdingKernelStatuses, want)
	}
	if want := "(" + strings.Join(sessions, ", ") + ")"; holdingSessionStatuses != want {
		t.Errorf("holdingSessionStatuses = %s, want %s", holdingSessionStatuses, want)
	}
}

// testDialect writes every fragment so that a test can see which one was
// chosen and with what.
var testDialect = Dialect{
	Param:     "?%d",
	InList:    "IN<%s>",
	NotInList: "NOTIN<%s>",
	EmptyList: "EMPTY<%s>",
	RowSet: func(first int, alias string, cols []Column) string {
		var b strings.Builder
		fmt.Fprintf(&b, "ROWS<%d %s", first, alias)
		for _, c := range cols {
			fmt.Fprintf(&b, " %s:%s", c.Name, c.Type)
		}
		return b.String() + ">"
	},
	JSONPairs: "PAIRS<%s>",
	RowLock:   "LOCK",
	ShareLock: "SHARE",
	ChangePos: "POS",
	Micros:    "MICROS<%s>",
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"parameters", "a = $1 AND b = $12 OR c = $1", "a = ?1 AND b = ?12 OR c = ?1"},
		{"dollar not followed by a digit", "SELECT $x", "SELECT $x"},
		{"micros", "({micros at} - $3) / $4", "(MICROS<at> - ?3) / ?4"},
		{"share", "SELECT a FROM t WHERE id = $1 {share}", "SELECT a FROM t WHERE id = ?1 SHARE"},
		{"string literals are kept", "json_extract(v, '$[0]') = $2 AND s = 'it''s {in $1}'",
			"json_extract(v, '$[0]') = ?2 AND s = 'it''s {in $1}'"},
		{"lists", "({empty $3} OR id {in $3}) AND k {not in $4}", "(EMPTY<?3> OR id IN<?3>) AND k NOTIN<?4>"},
		{"row set", "FROM {rows $2 u(id text, at timestamptz)} WHERE", "FROM ROWS<2 u id:text at:timestamptz> WHERE"},
		{"one-column row set", "{rows $1 u(id text)}", "ROWS<1 u id:text>"},
		{"pairs, lock and position", "CROSS JOIN {pairs k.requested} e ORDER BY {pos} {lock}",
			"CROSS JOIN PAIRS<k.requested> e ORDER BY POS LOCK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testDialect.render(tc.in); got != tc.want {
				t.Errorf("render(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRenderRefusesBadFragments(t *testing.T) {
	for _, q := range []string{
		"{in $1", "{in 1}", "{in $1x}", "{not $1}", "{nope}", "{rows $1 u}", "{rows $1 u(id)}", "{empty}",
	} {
		t.Run(q, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("render(%q) did not panic", q)
				}
			}()
			testDialect.render(q)
		})
	}
}
