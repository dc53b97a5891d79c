package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// changes reads the feed and fails the test on error.
func (f *fixture) changes(filter store.ChangeFilter) []store.Change {
	f.t.Helper()
	got, err := f.s.Changes(f.ctx, filter)
	f.must(err, "changes %+v", filter)
	return got
}

// change is a feed entry without its position, for comparison.
type change struct {
	Kind     store.ChangeKind
	Session  domain.SessionID
	Kernel   domain.KernelID
	Owner    string
	From, To string
	Reason   string
	Agent    domain.AgentID
	Exit     string
	At       int
}

func strip(cs []store.Change) []change {
	out := make([]change, len(cs))
	for i, c := range cs {
		exit := ""
		if c.ExitCode != nil {
			exit = fmt.Sprint(*c.ExitCode)
		}
		out[i] = change{Kind: c.Kind, Session: c.Session, Kernel: c.Kernel, Owner: c.Owner, From: c.From, To: c.To,
			Reason: c.Reason, Agent: c.Agent, Exit: exit, At: int(c.At.Sub(base).Seconds())}
	}
	return out
}

func testChanges(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8"})
	if got, err := f.s.LastChange(f.ctx); err != nil || got != 0 {
		t.Fatalf("last change of an empty feed: %d, %v; want 0", got, err)
	}
	s1 := f.session("s1", "g", "alice", 1, []string{"cpu", "1"})
	f.session("s2", "g", "bob", 1, []string{"cpu", "1"})
	f.schedule("g", s1, "a1")
	f.kernel("s1-k0", domain.KernelScheduled, domain.KernelPulling, func(u *store.KernelUpdate) { u.Reason = "pulling" })
	// A refused update records nothing.
	_, err := f.s.UpdateKernel(f.ctx, store.KernelUpdate{Kernel: "s1-k0", From: []domain.KernelStatus{domain.KernelRunning},
		To: domain.KernelTerminated, Now: at(41)})
	wantErr(t, err, store.ErrGuardFailed, "stale event")
	// Back to PENDING: the kernel's change names the agent it left.
	f.transition([]domain.SessionID{"s1"}, []domain.SessionStatus{domain.SessionScheduled},
		domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending})
	f.schedule("g", f.get("s1"), "a1")
	f.kernel("s1-k0", domain.KernelScheduled, domain.KernelError, func(u *store.KernelUpdate) {
		u.ExitCode = new(int)
		*u.ExitCode = 137
	})
	// A transition that keeps a status (here: nothing matches the guard)
	// records nothing.
	f.transition([]domain.SessionID{"s2"}, []domain.SessionStatus{domain.SessionRunning},
		domain.Transition{Session: domain.SessionTerminating})

	want := []change{
		{Kind: store.ChangeSession, Session: "s1", Owner: "alice", To: "PENDING", At: 1},
		{Kind: store.ChangeSession, Session: "s2", Owner: "bob", To: "PENDING", At: 1},
		{Kind: store.ChangeSession, Session: "s1", Owner: "alice", From: "PENDING", To: "SCHEDULED", At: 10},
		{Kind: store.ChangeKernel, Session: "s1", Kernel: "s1-k0", Owner: "alice", From: "PENDING", To: "SCHEDULED", Agent: "a1", At: 10},
		{Kind: store.ChangeKernel, Session: "s1", Kernel: "s1-k0", Owner: "alice", From: "SCHEDULED", To: "PULLING", Reason: "pulling", Agent: "a1", At: 40},
		{Kind: store.ChangeSession, Session: "s1", Owner: "alice", From: "SCHEDULED", To: "PENDING", Reason: "because", At: 50},
		{Kind: store.ChangeKernel, Session: "s1", Kernel: "s1-k0", Owner: "alice", From: "PULLING", To: "PENDING", Reason: "because", Agent: "a1", At: 50},
		{Kind: store.ChangeSession, Session: "s1", Owner: "alice", From: "PENDING", To: "SCHEDULED", At: 10},
		{Kind: store.ChangeKernel, Session: "s1", Kernel: "s1-k0", Owner: "alice", From: "PENDING", To: "SCHEDULED", Agent: "a1", At: 10},
		{Kind: store.ChangeKernel, Session: "s1", Kernel: "s1-k0", Owner: "alice", From: "SCHEDULED", To: "ERROR", Agent: "a1", Exit: "137", At: 40},
	}
	all := f.changes(store.ChangeFilter{})
	// A session's own change and its kernels' in one transaction may come
	// in either order; within each object the order is exact.
	byObject := cmpopts.SortSlices(func(a, b change) bool {
		return a.Session+domain.SessionID(a.Kernel) < b.Session+domain.SessionID(b.Kernel)
	})
	if diff := cmp.Diff(want, strip(all), byObject); diff != "" {
		t.Fatalf("feed (-want +got):\n%s", diff)
	}
	for _, obj := range []struct {
		session domain.SessionID
		kernel  domain.KernelID
	}{{"s1", ""}, {"s1", "s1-k0"}, {"s2", ""}} {
		var w, g []change
		for _, c := range want {
			if c.Session == obj.session && c.Kernel == obj.kernel {
				w = append(w, c)
			}
		}
		for _, c := range strip(all) {
			if c.Session == obj.session && c.Kernel == obj.kernel {
				g = append(g, c)
			}
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("changes of %s/%s out of order (-want +got):\n%s", obj.session, obj.kernel, diff)
		}
	}
	for i := 1; i < len(all); i++ {
		if all[i].Pos <= all[i-1].Pos {
			t.Fatalf("positions do not grow: %d after %d", all[i].Pos, all[i-1].Pos)
		}
	}
	last, err := f.s.LastChange(f.ctx)
	f.must(err, "last change")
	if last != all[len(all)-1].Pos {
		t.Errorf("last change %d, want %d", last, all[len(all)-1].Pos)
	}

	// Filters.
	if got := f.changes(store.ChangeFilter{User: "bob"}); len(got) != 1 || got[0].Session != "s2" {
		t.Errorf("bob's feed: %+v", got)
	}
	if got := f.changes(store.ChangeFilter{Sessions: []domain.SessionID{"s2", "ghost"}}); len(got) != 1 || got[0].Session != "s2" {
		t.Errorf("s2's feed: %+v", got)
	}
	if got := f.changes(store.ChangeFilter{User: "carol"}); len(got) != 0 {
		t.Errorf("carol's feed: %+v", got)
	}
	page := f.changes(store.ChangeFilter{After: all[2].Pos, Limit: 3})
	if diff := cmp.Diff(all[3:6], page); diff != "" {
		t.Errorf("page after %d (-want +got):\n%s", all[2].Pos, diff)
	}
	if got := f.changes(store.ChangeFilter{After: last}); len(got) != 0 {
		t.Errorf("after the last position: %+v", got)
	}
	f.invariant()
}

// testChangesConcurrent has writers move sessions through their lifecycle
// in parallel transactions while two store instances (two managers) follow
// the feed. Each follower must see every change exactly once, and each
// session's changes in the order they were made, whatever order the
// transactions committed in.
func testChangesConcurrent(t *testing.T, e Engine) {
	f := newFixture(t, e)
	other := f.open(Options{Registry: f.reg})
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "1000"})
	const writers, perWriter = 6, 8
	steps := []domain.Transition{
		{Session: domain.SessionPreparing, Kernel: domain.KernelPreparing},
		{Session: domain.SessionPrepared, Kernel: domain.KernelPrepared},
		{Session: domain.SessionCreating, Kernel: domain.KernelCreating},
		{Session: domain.SessionRunning, Kernel: domain.KernelRunning},
		{Session: domain.SessionTerminating, Kernel: domain.KernelTerminating},
		{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated},
	}
	from := []domain.SessionStatus{domain.SessionScheduled, domain.SessionPreparing, domain.SessionPrepared,
		domain.SessionCreating, domain.SessionRunning, domain.SessionTerminating}
	var ids [writers][]domain.SessionID
	for w := range writers {
		for i := range perWriter {
			id := fmt.Sprintf("w%d-s%d", w, i)
			f.schedule("g", f.session(id, "g", "alice", 1, []string{"cpu", "1"}), "a1")
			ids[w] = append(ids[w], domain.SessionID(id))
		}
	}
	start, err := f.s.LastChange(f.ctx)
	f.must(err, "last change")

	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, st := range steps {
				for _, id := range ids[w] {
					got, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{id}, from[i:i+1], st, "", at(60))
					if err != nil || len(got) != 1 {
						errs <- fmt.Errorf("move %s to %s: %v %v", id, st.Session, got, err)
						return
					}
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	follow := func(s store.Store) ([]store.Change, error) {
		var seen []store.Change
		after := start
		for finished := false; ; {
			select {
			case <-done:
				finished = true
			default:
			}
			got, err := s.Changes(f.ctx, store.ChangeFilter{After: after, Limit: 50})
			if err != nil {
				return nil, err
			}
			seen = append(seen, got...)
			if len(got) > 0 {
				after = got[len(got)-1].Pos
			}
			// Once the writers are done, one read that finds nothing new
			// means the follower has caught up.
			if finished && len(got) == 0 {
				return seen, nil
			}
		}
	}
	var followers sync.WaitGroup
	seen := make([][]store.Change, 2)
	ferr := make([]error, 2)
	for i, s := range []store.Store{f.s, other} {
		followers.Add(1)
		go func() {
			defer followers.Done()
			seen[i], ferr[i] = follow(s)
		}()
	}
	followers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range seen {
		f.must(ferr[i], "follower %d", i)
	}

	all := f.changes(store.ChangeFilter{After: start})
	if want := writers * perWriter * len(steps) * 2; len(all) != want {
		t.Fatalf("feed holds %d changes after the start, want %d", len(all), want)
	}
	for i, got := range seen {
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("follower %d saw another feed than the final one (-final +seen):\n%s", i, diff)
		}
	}
	// Each object's changes chain: every change starts where the last
	// one ended.
	lastTo := map[string]string{}
	for _, c := range all {
		key := string(c.Session) + "/" + string(c.Kernel)
		if prev, ok := lastTo[key]; ok && prev != c.From {
			t.Errorf("%s: change %s → %s follows one that ended in %s", key, c.From, c.To, prev)
		}
		lastTo[key] = c.To
	}
	f.invariant()
}

// testPruneChanges: pruning drops changes older than the cut from the start
// of the feed, never the latest one, and positions carry on after it.
func testPruneChanges(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8"})
	prune := func(before time.Time) int64 {
		t.Helper()
		n, err := f.s.PruneChanges(f.ctx, before)
		f.must(err, "prune changes before %v", before)
		return n
	}
	if n := prune(at(1000)); n != 0 {
		t.Fatalf("pruned %d changes from an empty feed", n)
	}
	s1 := f.session("s1", "g", "alice", 1, []string{"cpu", "1"})    // at 1
	f.schedule("g", s1, "a1")                                       // at 10: session and kernel
	f.kernel("s1-k0", domain.KernelScheduled, domain.KernelPulling) // at 40
	all := f.changes(store.ChangeFilter{})
	if len(all) != 4 {
		t.Fatalf("feed: %+v", all)
	}
	if n := prune(at(10)); n != 1 {
		t.Fatalf("pruned %d before 10s, want the creation only", n)
	}
	if diff := cmp.Diff(all[1:], f.changes(store.ChangeFilter{})); diff != "" {
		t.Fatalf("feed after pruning before 10s (-want +got):\n%s", diff)
	}
	if n := prune(at(1000)); n != 2 {
		t.Fatalf("pruned %d before 1000s, want all but the latest", n)
	}
	if diff := cmp.Diff(all[3:], f.changes(store.ChangeFilter{})); diff != "" {
		t.Fatalf("feed after pruning everything (-want +got):\n%s", diff)
	}
	last, err := f.s.LastChange(f.ctx)
	f.must(err, "last change")
	if last != all[3].Pos {
		t.Fatalf("last change %d after pruning, want %d", last, all[3].Pos)
	}
	f.session("s2", "g", "bob", 1, []string{"cpu", "1"})
	next := f.changes(store.ChangeFilter{After: last})
	if len(next) != 1 || next[0].Session != "s2" || next[0].Pos <= last {
		t.Fatalf("change after pruning: %+v (last was %d)", next, last)
	}
	f.invariant()
}
