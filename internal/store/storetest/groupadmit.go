package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testDrainRefusesSubmits: a group's admission is decided inside
// CreateSession's transaction. While two store instances create sessions
// in a group, a third drains it: every creation that begins after the
// drain has committed is refused with a *GroupClosedError naming DRAINING,
// and the sessions stored are exactly those whose creation succeeded. A
// STOPPED group still admits (it may start again).
func testDrainRefusesSubmits(t *testing.T, e Engine) {
	f := newFixture(t, e)
	g := f.group("g")
	stores := []store.Store{f.s, f.open(Options{Registry: f.reg}), f.open(Options{Registry: f.reg})}

	// Each submitter keeps creating until one of its creations began
	// after the drain committed, so every one races the drain.
	const submitters, most = 4, 2000
	var drained atomic.Bool
	type result struct {
		err          error
		afterDrained bool // the creation began after the drain committed
	}
	results := make([][]result, submitters)
	var wg sync.WaitGroup
	for w := range submitters {
		wg.Go(func() {
			for i := range most {
				s, ks := f.build(fmt.Sprintf("w%d-%04d", w, i), "g", "alice", 1, []string{"cpu", "1"})
				after := drained.Load()
				results[w] = append(results[w], result{stores[w%2].CreateSession(f.ctx, s, ks), after})
				if after {
					return
				}
			}
		})
	}
	wg.Go(func() {
		// Let some creations through first, so the drain lands among them.
		for {
			n, err := f.s.ListSessions(f.ctx, store.SessionFilter{Group: "g"})
			if err != nil || len(n) >= submitters {
				break
			}
			time.Sleep(time.Millisecond)
		}
		d := g
		d.State = domain.GroupDraining
		f.must(stores[2].PutResourceGroup(f.ctx, d), "drain")
		drained.Store(true)
	})
	wg.Wait()

	created, refusedAfter, total := 0, 0, 0
	for w := range results {
		for i, r := range results[w] {
			total++
			var ce *store.GroupClosedError
			switch {
			case r.err == nil:
				created++
				if r.afterDrained {
					t.Errorf("submit w%d-%04d began after the drain committed and was admitted", w, i)
				}
			case errors.As(r.err, &ce) && errors.Is(r.err, store.ErrConflict):
				if ce.Group != "g" || ce.State != domain.GroupDraining {
					t.Errorf("submit w%d-%04d refused naming %s %s, want g DRAINING", w, i, ce.Group, ce.State)
				}
				if r.afterDrained {
					refusedAfter++
				}
			default:
				t.Fatalf("submit w%d-%04d: %v", w, i, r.err)
			}
		}
	}
	if created < submitters || refusedAfter < submitters {
		t.Fatalf("%d of %d submits created, %d refused after the drain: want at least %d of each",
			created, total, refusedAfter, submitters)
	}
	stored, err := f.s.ListSessions(f.ctx, store.SessionFilter{Group: "g"})
	f.must(err, "list")
	if len(stored) != created {
		t.Errorf("%d sessions stored, %d creations succeeded", len(stored), created)
	}

	// STOPPED admits; ACTIVE again admits.
	stopped := g
	stopped.State = domain.GroupStopped
	f.group("s", func(x *domain.ResourceGroup) { *x = stopped; x.Name = "s" })
	s, ks := f.build("in-stopped", "s", "bob", 1, []string{"cpu", "1"})
	f.must(f.s.CreateSession(f.ctx, s, ks), "create in a STOPPED group")
	f.invariant()
}
