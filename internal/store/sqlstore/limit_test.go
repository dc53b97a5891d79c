package sqlstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A bare LIMIT parameter makes SQLite compile the statement again on
// every execution (see noLimit); each must be cast.
func TestLimitParametersAreCast(t *testing.T) {
	bare := regexp.MustCompile(`(?i)LIMIT\s+\$\d`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if strings.Contains(lit.Value, "LIMIT CAST(") {
				checked++
			}
			if bare.MatchString(lit.Value) {
				t.Errorf("%s: bare LIMIT parameter, write LIMIT CAST($n AS BIGINT): %s", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("found no LIMIT CAST( in the package's queries: is the test reading the right files?")
	}
}
