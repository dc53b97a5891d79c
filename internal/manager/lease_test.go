package manager

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/store/pgtest"
)

func TestPGLeaseIsHeldByOneAndPassesOnWhenItsHolderGoes(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	a, b := newPGLease(dsn, log), newPGLease(dsn, log)
	a.retry, b.retry = 10*time.Millisecond, 10*time.Millisecond
	defer a.Close()
	defer b.Close()
	if !a.Held(ctx) {
		t.Fatal("first lease not taken")
	}
	for range 5 {
		time.Sleep(15 * time.Millisecond)
		if b.Held(ctx) {
			t.Fatal("two managers hold the lease at once")
		}
		if !a.Held(ctx) {
			t.Fatal("the holder lost its lease")
		}
	}
	// The holder dies: its connection closes and PostgreSQL frees the lock.
	a.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !b.Held(ctx) {
		if time.Now().After(deadline) {
			t.Fatal("the lease never passed on")
		}
		time.Sleep(15 * time.Millisecond)
	}
}
