package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
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
		Migrator:   migrator,
		DumpSchema: dumpSchema,
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, engine())
}

// TestScratch: a scratch store (the simulator's) keeps what it commits,
// rolls back a refused write whole, reads its own writes on its one
// connection, and keeps every other store off its file.
func TestScratch(t *testing.T) {
	ctx := t.Context()
	reg := domain.DefaultRegistry()
	path := filepath.Join(t.TempDir(), "scratch.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{Registry: reg, Scratch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := domain.ResourceGroup{Name: "g", State: domain.GroupActive, Sequencer: "fifo", Selector: "concentrated",
		HeadOfLine: domain.HOLSkip, MaxRetries: domain.DefaultMaxRetries, Timeouts: domain.DefaultTimeouts()}
	if err := st.PutResourceGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	capacity, _ := reg.ParseSlots(map[string]string{"cpu": "8", "mem": "32g"})
	if _, err := st.RegisterAgent(ctx, domain.Agent{ID: "a1", ResourceGroup: "g", Architecture: "x86_64",
		Schedulable: true, Capacity: capacity}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	req, _ := reg.ParseSlots(map[string]string{"cpu": "1"})
	create := func(id string) error {
		s := domain.Session{ID: domain.SessionID(id), Name: "same", Owner: domain.Owner{User: "alice", Project: "p", Domain: "d"},
			Type: domain.TypeBatch, Image: "sleep", Architecture: "x86_64", ResourceGroup: "g",
			ClusterMode: domain.SingleNode, ClusterSize: 1, Requested: req, CreatedAt: time.Unix(1, 0)}
		return st.CreateSession(ctx, s, []domain.Kernel{{ID: domain.KernelID(id + "-k0"), SessionID: s.ID,
			ClusterRole: domain.RoleMain, Image: "sleep", Architecture: "x86_64", Requested: req}})
	}
	if err := create("s1"); err != nil {
		t.Fatal(err)
	}
	if err := create("s2"); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("second session of the same name: %v, want ErrNameTaken", err)
	}
	snap, err := st.LoadSnapshot(ctx, "g", time.Unix(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Pending) != 1 || snap.Pending[0].Session.ID != "s1" || len(snap.Agents) != 1 {
		t.Fatalf("snapshot has %d pending (want s1 alone) and %d agents (want 1)", len(snap.Pending), len(snap.Agents))
	}
	if ks, err := st.ListKernels(ctx, store.KernelFilter{}); err != nil || len(ks) != 1 {
		t.Fatalf("kernels after the refused session: %d, %v; want s1's alone", len(ks), err)
	}
	if other, err := sqlite.Open(ctx, path, sqlite.Options{Registry: reg, BusyTimeout: 100 * time.Millisecond}); err == nil {
		other.Close()
		t.Fatal("a second store opened the scratch store's file")
	}
}
