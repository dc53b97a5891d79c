package storetest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/sokovan-go/sokovan/internal/domain"
)

var (
	sqlComment = regexp.MustCompile(`--.*`)
	whiteSpace = regexp.MustCompile(`\s+`)
)

// FoldSQL is a statement as an engine stored it, without its comments and
// with its white space folded: SQLite keeps a CREATE statement's text as
// written, so the layout of a migration would otherwise read as a change
// of schema.
func FoldSQL(s string) string {
	return strings.TrimSpace(whiteSpace.ReplaceAllString(sqlComment.ReplaceAllString(s, ""), " "))
}

// Golden compares got with the file at path, or writes it there when
// update is set (go test -run Schema -update). A migration that changes
// the schema shows as a diff of that file, reviewed with the change; a
// rewrite of the migrations that must not change it (the schema's move to
// one folder of templates) is proven by the file staying as it is.
func Golden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got == string(want) {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		gl, wl := line(g, i), line(w, i)
		if gl != wl {
			t.Fatalf("%s differs from line %d:\ngot  %s\nwant %s", path, i+1, gl, wl)
		}
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}

// RunSchema checks that the migrations make, in an empty database, the
// schema of testdata/schema.golden (written there instead with update),
// and that every migration's Down undoes its Up: the last one down and up
// again, then all of them down to none and up, make that schema again.
//
// It needs e's Migrator and DumpSchema.
func RunSchema(t *testing.T, e Engine, update bool) {
	golden := filepath.Join("testdata", "schema.golden")
	t.Run("Up", func(t *testing.T) {
		db := e.NewDB(t)
		st, err := e.Open(t.Context(), db, Options{Registry: domain.DefaultRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		Golden(t, golden, e.DumpSchema(t, db), update)
	})
	t.Run("Down", func(t *testing.T) {
		db := e.NewDB(t)
		downAndUp(t, func() (Migrator, error) { return e.Migrator(t, db) })
		Golden(t, golden, e.DumpSchema(t, db), false)
	})
}

// Migrator is the part of goose's Provider the Down test steps with.
type Migrator interface {
	Up(ctx context.Context) ([]*goose.MigrationResult, error)
	Down(ctx context.Context) (*goose.MigrationResult, error)
	DownTo(ctx context.Context, version int64) ([]*goose.MigrationResult, error)
	GetDBVersion(ctx context.Context) (int64, error)
}

// downAndUp migrates up, takes the last migration down and up again,
// then every migration down to none and all up again.
func downAndUp(t testing.TB, newMigrator func() (Migrator, error)) {
	t.Helper()
	ctx := t.Context()
	m, err := newMigrator()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	last, err := m.GetDBVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Down(ctx); err != nil {
		t.Fatalf("down from %d: %v", last, err)
	}
	if v, err := m.GetDBVersion(ctx); err != nil || v >= last {
		t.Fatalf("after down from %d: version %d, %v", last, v, err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if _, err := m.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("up from 0: %v", err)
	}
}
