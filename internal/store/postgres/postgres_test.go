package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sokovan-go/sokovan/internal/store/pgtest"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

const defaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// The test run gets its own database, created in TestMain and dropped at
// the end; each test gets its own schema in it.
var (
	runDSN      string
	admin       *pgxpool.Pool
	unavailable string // why PostgreSQL tests cannot run, if they cannot
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	base := os.Getenv("SOKOVAN_TEST_POSTGRES")
	if base == "" {
		base = defaultDSN
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		unavailable = fmt.Sprintf("PostgreSQL is unreachable (SOKOVAN_TEST_POSTGRES or %s): %v", defaultDSN, err)
		return m.Run()
	}
	name := "sokovan_test_" + randomHex()
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	conn.Close(ctx)
	if err != nil {
		unavailable = fmt.Sprintf("cannot create a test database: %v", err)
		return m.Run()
	}
	defer dropDatabase(base, name)
	runDSN = withParam(base, "dbname", name)
	if admin, err = pgxpool.New(ctx, runDSN); err != nil {
		unavailable = fmt.Sprintf("cannot connect to the test database: %v", err)
		return m.Run()
	}
	defer admin.Close()
	return m.Run()
}

func dropDatabase(base, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "drop test database %s: %v\n", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		fmt.Fprintf(os.Stderr, "drop test database %s: %v\n", name, err)
	}
}

// requirePostgres skips the test when PostgreSQL is not there, except in
// CI, where a missing database is a failure.
func requirePostgres(t testing.TB) {
	t.Helper()
	if unavailable == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", unavailable)
	}
	t.Skip(unavailable)
}

// withParam sets one connection parameter in a URL or keyword/value DSN.
func withParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			if key == "dbname" {
				u.Path = "/" + value
			} else {
				q := u.Query()
				q.Set(key, value)
				u.RawQuery = q.Encode()
			}
			return u.String()
		}
	}
	return dsn + " " + key + "=" + value // a later keyword wins
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand does not fail
	return hex.EncodeToString(b)
}

// newSchema makes an empty schema for one test and returns a DSN that
// uses it.
func newSchema(t testing.TB) string {
	t.Helper()
	requirePostgres(t)
	schema := "t_" + randomHex()
	if _, err := admin.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return withParam(runDSN, "search_path", schema)
}

func engine() storetest.Engine {
	// pgtest's engine, with a schema per test instead of a database per
	// test: the conformance suite opens hundreds.
	e := pgtest.Engine()
	e.NewDB = func(t testing.TB) string { return newSchema(t) }
	e.Migrator, e.DumpSchema = migrator, dumpSchema
	return e
}

func TestConformance(t *testing.T) {
	requirePostgres(t)
	storetest.Run(t, engine())
}
