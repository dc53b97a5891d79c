package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultDSN is the server tests use unless SOKOVAN_TEST_POSTGRES says
// otherwise.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// NewDatabase creates a database for t and returns its DSN.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := os.Getenv("SOKOVAN_TEST_POSTGRES")
	if base == "" {
		base = DefaultDSN
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		unavailable(t, "PostgreSQL is unreachable at "+base+": "+err.Error())
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "sokovan_t_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		unavailable(t, "cannot create a test database: "+err.Error())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SOKOVAN_TEST_POSTGRES: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: PostgreSQL is required)", why)
	}
	t.Skip(why)
}
