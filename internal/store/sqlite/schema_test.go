package sqlite_test

import (
	"database/sql"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/store/sqlstore"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.golden from the migrations instead of comparing")

// TestSchema: the migrations make, on an empty file, the tables, indexes
// and triggers of testdata/schema.golden, statement for statement, and
// each one's Down undoes it.
func TestSchema(t *testing.T) {
	storetest.RunSchema(t, engine(), *update)
}

// migrator is goose's Provider over the migrations, on its own connection
// to the file.
func migrator(t testing.TB, path string) (storetest.Migrator, error) {
	db := rawDB(t, path+"?_pragma=foreign_keys(1)")
	db.SetMaxOpenConns(1)
	return sqlstore.NewMigrator(db, sqlstore.SQLite)
}

func rawDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// dumpSchema lists every table, index and trigger of the file but goose's
// own, with the statement SQLite keeps for it.
func dumpSchema(t testing.TB, path string) string {
	t.Helper()
	rows, err := rawDB(t, path).QueryContext(t.Context(), `SELECT type, name, tbl_name, sql FROM sqlite_master
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
