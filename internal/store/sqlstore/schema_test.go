package sqlstore

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The migrations rendered for each engine are its hand-written ones, but
// for comments and white space.
func TestSchemaRendersEachEngineMigrations(t *testing.T) {
	for _, f := range []Flavor{Postgres, SQLite} {
		fsys, err := Schema(f)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join("..", f.String(), "migrations")
		old, err := filepath.Glob(filepath.Join(dir, "*.sql"))
		if err != nil || len(old) == 0 {
			t.Fatalf("%s: %v %v", dir, old, err)
		}
		got, _ := fs.Glob(fsys, "*.sql")
		if len(got) != len(old) {
			t.Errorf("%v: %d migrations rendered, %d in %s", f, len(got), len(old), dir)
		}
		for _, p := range old {
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rendered, err := fs.ReadFile(fsys, filepath.Base(p))
			if err != nil {
				t.Errorf("%v: %v", f, err)
				continue
			}
			if g, w := sqlText(string(rendered), true), sqlText(string(want), true); g != w {
				t.Errorf("%v %s: rendered %s", f, filepath.Base(p), firstDiff(g, w))
			} else if sqlText(string(rendered), false) != sqlText(string(want), false) {
				t.Logf("%v %s: the same SQL, other comments", f, filepath.Base(p))
			}
		}
	}
}

var (
	sqlComment = regexp.MustCompile(`(?m)--( [^+].*|)$`)
	whiteSpace = regexp.MustCompile(`\s+`)
)

// sqlText is a migration's text with its white space folded, and without
// its comments (but goose's annotations) when bare.
func sqlText(s string, bare bool) string {
	if bare {
		s = sqlComment.ReplaceAllString(s, "")
	}
	return strings.TrimSpace(whiteSpace.ReplaceAllString(s, " "))
}

// firstDiff shows where got first differs from want.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-60)
	return fmt.Sprintf("…%s…, want …%s…", got[from:min(len(got), i+60)], want[from:min(len(want), i+60)])
}
