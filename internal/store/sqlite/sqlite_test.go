package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

func engine() storetest.Engine {
	return storetest.Engine{
		NewDB: func(t testing.TB) string { return filepath.Join(t.TempDir(), "sokovan.db") },
		Open: func(ctx context.Context, db string, opts storetest.Options) (store.Store, error) {
			return sqlite.Open(ctx, db, sqlite.Options{Registry: opts.Registry, Fault: opts.Fault})
		},
		Exec: func(t testing.TB, db, query string) {
			t.Helper()
			raw, err := sql.Open("sqlite", db+"?_pragma=busy_timeout(10000)")
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.ExecContext(t.Context(), query); err != nil {
				t.Fatalf("raw SQL %q: %v", query, err)
			}
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, engine())
}
