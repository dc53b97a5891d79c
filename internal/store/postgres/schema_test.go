package postgres_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for goose

	"github.com/sokovan-go/sokovan/internal/store/sqlstore"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.golden from the migrations instead of comparing")

// TestSchema: the migrations make, in an empty schema, the columns,
// constraints, indexes, triggers and functions of testdata/schema.golden,
// and each one's Down undoes it.
func TestSchema(t *testing.T) {
	requirePostgres(t)
	storetest.RunSchema(t, engine(), *update)
}

// migrator is goose's Provider over the migrations, through a
// database/sql handle of its own.
func migrator(t testing.TB, dsn string) (storetest.Migrator, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { db.Close() })
	return sqlstore.NewMigrator(db, sqlstore.Postgres)
}

// schemaQueries read the catalog of the schema named by $1, each row's
// columns written on one line, goose's own table left out.
var schemaQueries = []struct{ what, query string }{
	{"column", `SELECT table_name || '.' || column_name,
		data_type || CASE is_nullable WHEN 'NO' THEN ' NOT NULL' ELSE '' END || COALESCE(' DEFAULT ' || column_default, '')
		FROM information_schema.columns WHERE table_schema = $1 AND table_name <> 'goose_db_version'
		ORDER BY table_name, ordinal_position`},
	{"constraint", `SELECT c.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
		FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname <> 'goose_db_version' ORDER BY c.relname, k.conname`},
	{"index", `SELECT tablename || '.' || indexname, indexdef FROM pg_indexes
		WHERE schemaname = $1 AND tablename <> 'goose_db_version' ORDER BY tablename, indexname`},
	{"trigger", `SELECT c.relname || '.' || g.tgname, pg_get_triggerdef(g.oid)
		FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND NOT g.tgisinternal ORDER BY c.relname, g.tgname`},
	{"function", `SELECT p.proname, pg_get_functiondef(p.oid)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY p.proname`},
}

// dumpSchema writes what schemaQueries read of the schema dsn selects,
// with the schema's name taken out (it is a new one each run).
func dumpSchema(t testing.TB, dsn string) string {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, q := range schemaQueries {
		rows, err := conn.Query(ctx, q.query, schema)
		if err != nil {
			t.Fatalf("%s: %v", q.what, err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s", q.what)
			for _, v := range vals {
				fmt.Fprintf(&b, "\t%s", strings.ReplaceAll(fmt.Sprint(v), schema+".", ""))
			}
			b.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
