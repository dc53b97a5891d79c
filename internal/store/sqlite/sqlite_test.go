package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
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
	st := openScratch(t, path, reg, nil)
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

// TestScratchFeedKnowsItsEnd: a scratch store, the only writer of its
// file, answers a read of the change feed past the end it last found
// without a query while it has written nothing since; every write ends
// that, so a follower reading concurrently with writes still gets every
// change, in order, exactly once.
func TestScratchFeedKnowsItsEnd(t *testing.T) {
	ctx := t.Context()
	reg := domain.DefaultRegistry()
	var queries atomic.Int64
	st := openScratch(t, filepath.Join(t.TempDir(), "scratch.db"), reg, func(point string) error {
		if point == store.FaultFeedQuery {
			queries.Add(1)
		}
		return nil
	})
	req, _ := reg.ParseSlots(map[string]string{"cpu": "1"})
	create := func(i int) {
		id := domain.SessionID(fmt.Sprintf("s%04d", i))
		s := domain.Session{ID: id, Owner: domain.Owner{User: "alice", Project: "p", Domain: "d"},
			Type: domain.TypeBatch, Image: "sleep", Architecture: "x86_64", ResourceGroup: "g",
			ClusterMode: domain.SingleNode, ClusterSize: 1, Requested: req, CreatedAt: time.Unix(1, 0)}
		if err := st.CreateSession(ctx, s, []domain.Kernel{{ID: domain.KernelID(id + "-k0"), SessionID: id,
			ClusterRole: domain.RoleMain, Image: "sleep", Architecture: "x86_64", Requested: req}}); err != nil {
			t.Error(err)
		}
	}
	create(0)
	first, err := st.Changes(ctx, store.ChangeFilter{})
	if err != nil || len(first) == 0 {
		t.Fatalf("changes: %d, %v", len(first), err)
	}
	end := first[len(first)-1].Pos
	before := queries.Load()
	for range 5 {
		if chs, err := st.Changes(ctx, store.ChangeFilter{After: end}); err != nil || len(chs) != 0 {
			t.Fatalf("past the end with nothing written: %d changes, %v", len(chs), err)
		}
	}
	if n := queries.Load() - before; n != 0 {
		t.Errorf("%d feed queries past a known end with nothing written, want none", n)
	}
	create(1)
	if chs, err := st.Changes(ctx, store.ChangeFilter{After: end}); err != nil || len(chs) != 1 || chs[0].Session != "s0001" {
		t.Fatalf("after a write: %+v, %v; want s0001's creation", chs, err)
	}

	// A follower reading in pages of 3 while sessions are created.
	const n = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 2; i < n; i++ {
			create(i)
		}
	}()
	var got []int64
	pos := end
	follow := func() {
		chs, err := st.Changes(ctx, store.ChangeFilter{After: pos, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chs {
			got = append(got, ch.Pos)
			pos = ch.Pos
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		follow()
	}
	for range n {
		follow()
	}
	all, err := st.Changes(ctx, store.ChangeFilter{After: end})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, len(all))
	for i, ch := range all {
		want[i] = ch.Pos
	}
	if !slices.Equal(got, want) {
		t.Errorf("the follower read %d changes, the feed holds %d after %d: the follower missed or repeated some", len(got), len(want), end)
	}
}

// openScratch opens a scratch store at path, closed when the test ends,
// with the FIFO group "g" in it.
func openScratch(t *testing.T, path string, reg *domain.Registry, fault store.FaultHook) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), path, sqlite.Options{Registry: reg, Scratch: true, Fault: fault})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := domain.ResourceGroup{Name: "g", State: domain.GroupActive, Sequencer: "fifo", Selector: "concentrated",
		HeadOfLine: domain.HOLSkip, MaxRetries: domain.DefaultMaxRetries, Timeouts: domain.DefaultTimeouts()}
	if err := st.PutResourceGroup(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	return st
}
