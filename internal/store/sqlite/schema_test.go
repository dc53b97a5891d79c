package sqlite_test

import (
	"database/sql"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
	"github.com/sokovan-go/sokovan/internal/store/sqlstore"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.golden from the migrations instead of comparing")

// TestSchema: the migrations make, on an empty file, the schema of
// testdata/schema.golden, object for object.
func TestSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sokovan.db")
	st, err := sqlite.Open(t.Context(), path, sqlite.Options{Registry: domain.DefaultRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	storetest.Golden(t, filepath.Join("testdata", "schema.golden"), dumpSchema(t, path), *update)
}

// dumpSchema lists every table, index and trigger of the file but goose's
// own, with the statement SQLite keeps for it.
func dumpSchema(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT type, name, tbl_name, sql FROM sqlite_master
		WHERE sql IS NOT NULL AND tbl_name <> 'goose_db_version' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, table, stmt string
		if err := rows.Scan(&typ, &name, &table, &stmt); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s on %s\n\t%s\n", typ, name, table, storetest.FoldSQL(stmt))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSchemaDown: every migration's Down undoes its Up, so that going
// down to nothing and up again makes the same schema.
func TestSchemaDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sokovan.db")
	db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	storetest.DownAndUp(t, func() (storetest.Migrator, error) { return sqlstore.NewMigrator(db, sqlstore.SQLite) })
	storetest.Golden(t, filepath.Join("testdata", "schema.golden"), dumpSchema(t, path), false)
}
