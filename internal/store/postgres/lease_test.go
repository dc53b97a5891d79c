package postgres_test

import (
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store/postgres"
)

const leaseRetry = 10 * time.Millisecond

func openStore(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), dsn, postgres.Options{Registry: domain.DefaultRegistry(), MaxConns: 2})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Two installations in one database, each in its own schema, lead each
// their own managers: one's lease does not keep the other's from leading.
func TestLeaseIsScopedToTheSchema(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	a := openStore(t, newSchema(t)).Lease("coordinator", leaseRetry)
	b := openStore(t, newSchema(t)).Lease("coordinator", leaseRetry)
	defer a.Close()
	defer b.Close()
	if !a.Held(t.Context()) {
		t.Fatal("the first schema's lease was not taken")
	}
	if !b.Held(t.Context()) {
		t.Fatal("the second schema's lease was not taken while the first schema's is held")
	}
}

// Managers of one schema (each with its own store) exclude each other,
// and the lease passes on when the holder's connection dies.
func TestLeaseIsHeldByOneAndPassesOnWhenItsHolderDies(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	dsn := newSchema(t)
	// A name of its own, so this test finds its holder among the other
	// tests' lease connections.
	name := "test-" + randomHex()
	a := openStore(t, dsn).Lease(name, leaseRetry)
	b := openStore(t, dsn).Lease(name, leaseRetry)
	defer a.Close()
	defer b.Close()
	ctx := t.Context()
	if !a.Held(ctx) {
		t.Fatal("first lease not taken")
	}
	for range 5 {
		time.Sleep(2 * leaseRetry) // past b's retry interval, so b really tries
		if b.Held(ctx) {
			t.Fatal("two managers of one schema hold the lease at once")
		}
		if !a.Held(ctx) {
			t.Fatal("the holder lost its lease")
		}
	}

	// The holder's connection dies (a crashed manager, a cut network):
	// PostgreSQL ends its session and with it the lock.
	var killed int
	err := admin.QueryRow(ctx, `SELECT count(*) FROM (
    SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1) k`,
		"sokovan lease "+name).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminate the holder's connection: %d terminated, %v", killed, err)
	}
	waitFor(t, "the lease to pass on", func() bool { return b.Held(ctx) })
	if a.Held(ctx) {
		t.Error("the old holder still believes it holds the lease")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(leaseRetry)
	}
}
