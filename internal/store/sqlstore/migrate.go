package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing/fstest"
	"text/template"

	"github.com/pressly/goose/v3"
)

// Flavor is the engine a migration is rendered for; it also picks goose's
// dialect.
type Flavor int

// The engines of store/postgres and store/sqlite.
const (
	Postgres Flavor = iota + 1
	SQLite
)

func (f Flavor) String() string {
	switch f {
	case Postgres:
		return "postgres"
	case SQLite:
		return "sqlite"
	}
	return fmt.Sprintf("Flavor(%d)", int(f))
}

// schemaFiles are the migrations, written once as text/template (see
// Schema).
//
//go:embed schema/*.sql
var schemaFiles embed.FS

// schemaData is what a migration's {{if .Postgres}} and {{if .SQLite}}
// test, for the statements an engine spells its own way beyond a type
// (triggers, PostgreSQL's partial indexes over a column SQLite lacks).
type schemaData struct{ Postgres, SQLite bool }

// schemaFuncs are the column types and clauses whose spelling is each
// engine's. The SQLite side keeps its tables STRICT, times in INTEGER
// microseconds and booleans as 0/1 under a CHECK.
func schemaFuncs(f Flavor) template.FuncMap {
	pg := f == Postgres
	pick := func(postgres, sqlite string) func() string {
		if pg {
			return func() string { return postgres }
		}
		return func() string { return sqlite }
	}
	return template.FuncMap{
		"json":    pick("JSONB", "TEXT"),
		"time":    pick("TIMESTAMPTZ", "INTEGER"),
		"bigint":  pick("BIGINT", "INTEGER"),
		"real":    pick("DOUBLE PRECISION", "REAL"),
		"bytes":   pick("BYTEA", "BLOB"),
		"octets":  pick("octet_length", "length"),
		"serial":  pick("BIGSERIAL PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT"),
		"sqlTrue": pick("TRUE", "1"),
		// {{bool "col"}} is a NOT NULL boolean column's type;
		// {{bool "col" false}} gives it a default.
		"bool": func(col string, def ...bool) (string, error) {
			if len(def) > 1 {
				return "", fmt.Errorf("bool %s: one default at most", col)
			}
			return boolColumn(pg, col, def), nil
		},
		// {{strict}} ends a CREATE TABLE; {{strict "WITHOUT ROWID"}}
		// adds SQLite's other table options.
		"strict": func(opts ...string) string {
			if pg {
				return ""
			}
			return " " + strings.Join(append([]string{"STRICT"}, opts...), ", ")
		},
	}
}

// boolColumn: SQLite has no boolean type; 0 and 1 under a CHECK keep a
// STRICT table's INTEGER to the two values the store writes.
func boolColumn(pg bool, col string, def []bool) string {
	if pg {
		if len(def) == 0 {
			return "BOOLEAN NOT NULL"
		}
		return fmt.Sprintf("BOOLEAN NOT NULL DEFAULT %s", strings.ToUpper(fmt.Sprint(def[0])))
	}
	d := ""
	if len(def) > 0 {
		d = " DEFAULT 0"
		if def[0] {
			d = " DEFAULT 1"
		}
	}
	return fmt.Sprintf("INTEGER NOT NULL%s CHECK (%s IN (0, 1))", d, col)
}

var (
	postgresSchema = sync.OnceValues(func() (fs.FS, error) { return renderSchema(Postgres) })
	sqliteSchema   = sync.OnceValues(func() (fs.FS, error) { return renderSchema(SQLite) })
)

// Schema returns the migrations rendered for f, as goose reads them: one
// NNNNN_name.sql a version at the root. They are written once, in
// schema/, as text/template over the functions of schemaFuncs and
// schemaData, because the engines' schemas are the same tables, columns
// and indexes but for their types and triggers, and two copies of every
// migration drift apart where a function cannot.
func Schema(f Flavor) (fs.FS, error) {
	switch f {
	case Postgres:
		return postgresSchema()
	case SQLite:
		return sqliteSchema()
	}
	return nil, fmt.Errorf("schema: unknown %v", f)
}

func renderSchema(f Flavor) (fs.FS, error) {
	names, err := fs.Glob(schemaFiles, "schema/*.sql")
	if err != nil {
		return nil, err
	}
	out := fstest.MapFS{}
	for _, name := range names {
		text, err := schemaFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		base := path.Base(name)
		b, err := renderMigration(base, string(text), f)
		if err != nil {
			return nil, err
		}
		out[base] = &fstest.MapFile{Data: b, Mode: 0o444}
	}
	return out, nil
}

// renderMigration renders one migration's template for f.
func renderMigration(name, text string, f Flavor) ([]byte, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(schemaFuncs(f)).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, schemaData{Postgres: f == Postgres, SQLite: f == SQLite}); err != nil {
		return nil, fmt.Errorf("schema: %s for %v: %w", name, f, err)
	}
	return b.Bytes(), nil
}

// Migrate brings db's schema up to date with the migrations rendered for
// f. opts add to the provider's options, such as a lock that makes
// concurrent migrators take turns.
func Migrate(ctx context.Context, db *sql.DB, f Flavor, opts ...goose.ProviderOption) error {
	p, err := NewMigrator(db, f, opts...)
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// NewMigrator is goose's provider over the migrations rendered for f, for
// callers that step through versions (tests of a migration's Down).
func NewMigrator(db *sql.DB, f Flavor, opts ...goose.ProviderOption) (*goose.Provider, error) {
	fsys, err := Schema(f)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	dialect := goose.DialectPostgres
	if f == SQLite {
		dialect = goose.DialectSQLite3
	}
	opts = append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithLogger(goose.NopLogger())}, opts...)
	p, err := goose.NewProvider(dialect, db, fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}
