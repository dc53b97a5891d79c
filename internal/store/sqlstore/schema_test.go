package sqlstore

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every migration renders for both engines, under the same versions, and
// a rendered one holds no word of the other engine's SQL: a type written
// out where a function belongs (TIMESTAMPTZ for {{time}}) fails here, not
// only on the engine that refuses it.
func TestSchemaRendersForEachEngine(t *testing.T) {
	foreign := map[Flavor]*regexp.Regexp{
		Postgres: regexp.MustCompile(`\b(STRICT|AUTOINCREMENT|WITHOUT ROWID|NEW\.|OLD\.)`),
		SQLite:   regexp.MustCompile(`\b(JSONB|TIMESTAMPTZ|BIGINT|BIGSERIAL|BYTEA|BOOLEAN|DOUBLE PRECISION|plpgsql|octet_length|TRUE|FALSE)\b`),
	}
	templates, err := fs.Glob(schemaFiles, "schema/*.sql")
	if err != nil || len(templates) == 0 {
		t.Fatalf("templates: %v %v", templates, err)
	}
	version := regexp.MustCompile(`^\d{5}_[a-z0-9_]+\.sql$`)
	for _, f := range []Flavor{Postgres, SQLite} {
		fsys, err := Schema(f)
		if err != nil {
			t.Fatal(err)
		}
		names, _ := fs.Glob(fsys, "*.sql")
		if len(names) != len(templates) {
			t.Errorf("%v: %d rendered of %d", f, len(names), len(templates))
		}
		for _, name := range names {
			if !version.MatchString(name) {
				t.Errorf("%v: %s is not NNNNN_name.sql", f, name)
			}
			b, _ := fs.ReadFile(fsys, name)
			text := stripComments(string(b))
			if w := foreign[f].FindString(text); w != "" {
				t.Errorf("%v %s: holds %q", f, name, w)
			}
			if strings.Contains(text, "{{") || !strings.Contains(text, "-- +goose Up") {
				t.Errorf("%v %s: not rendered, or no Up", f, name)
			}
		}
	}
	if _, err := Schema(Flavor(0)); err == nil {
		t.Error("Schema of no engine: no error")
	}
}

var sqlComment = regexp.MustCompile(`(?m)--( [^+].*|)$`)

// stripComments keeps goose's annotations.
func stripComments(s string) string { return sqlComment.ReplaceAllString(s, "") }

// The engines' old migration folders are gone for good: nothing embeds
// them any more, so a migration merged into one would never run. Convert
// it into schema/ (docs/STORE.md, Migrations).
func TestNoEngineMigrationFolders(t *testing.T) {
	for _, dir := range []string{"../postgres/migrations", "../sqlite/migrations"} {
		if entries, err := os.ReadDir(dir); err == nil {
			t.Errorf("%s holds %d files that no engine runs: convert them into schema/", dir, len(entries))
		}
	}
}

// Each function writes its engine's spelling, and a misused one fails the
// render, naming the migration, rather than writing SQL an engine would
// take some other way.
func TestRenderMigration(t *testing.T) {
	const text = `x {{bool "x"}}, y {{bool "y" false}}, {{if .Postgres}}p{{else}}s{{end}}){{strict "WITHOUT ROWID"}};`
	for f, want := range map[Flavor]string{
		Postgres: `x BOOLEAN NOT NULL, y BOOLEAN NOT NULL DEFAULT FALSE, p);`,
		SQLite:   `x INTEGER NOT NULL CHECK (x IN (0, 1)), y INTEGER NOT NULL DEFAULT 0 CHECK (y IN (0, 1)), s) STRICT, WITHOUT ROWID;`,
	} {
		got, err := renderMigration("00001_t.sql", text, f)
		if err != nil || string(got) != want {
			t.Errorf("%v: %q, %v; want %q", f, got, err, want)
		}
	}
	for _, bad := range []string{`{{bool "x" false true}}`, `{{jsonb}}`, `{{.Mysql}}`} {
		if _, err := renderMigration("00002_bad.sql", bad, SQLite); err == nil || !strings.Contains(err.Error(), "00002_bad.sql") {
			t.Errorf("%s: %v, want an error naming the file", bad, err)
		}
	}
}
