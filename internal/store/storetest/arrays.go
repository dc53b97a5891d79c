package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// buildArray makes an array of n elements named name, owned by user, each
// a one-kernel session asking 1 cpu.
func (f *fixture) buildArray(id, name, user string, n, maxRunning int) (domain.Array, []store.NewSession) {
	f.t.Helper()
	a := domain.Array{ID: domain.ArrayID(id), Name: name, Owner: domain.Owner{User: user, Project: "p-" + user, Domain: "default"},
		Spec: fmt.Sprintf("0-%d%%%d", n-1, maxRunning), Count: n, MaxRunning: maxRunning, CreatedAt: at(1)}
	elems := make([]store.NewSession, n)
	for i := range n {
		s, k := f.build(fmt.Sprintf("%s-%d", id, i), "default", user, 1, []string{"cpu=1"}, func(s *domain.Session) {
			s.Name, s.Array, s.ArrayIndex = domain.ArrayElementName(name, i), a.ID, i
			s.Env = map[string]string{domain.EnvArrayIndex: fmt.Sprint(i)}
		})
		elems[i] = store.NewSession{Session: s, Kernels: k}
	}
	return a, elems
}

func testArrays(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("default")
	f.agent("a1", "default", []string{"cpu=8"})
	arr, elems := f.buildArray("arr1", "sweep", "alice", 5, 2)
	f.must(f.s.CreateArray(f.ctx, arr, elems), "create array")

	got, err := f.s.GetArray(f.ctx, "arr1")
	f.must(err, "get array")
	if diff := cmp.Diff(arr, got); diff != "" {
		t.Fatalf("array round trip (-want +got):\n%s", diff)
	}
	if _, err := f.s.GetArray(f.ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing array: %v; want ErrNotFound", err)
	}
	members, err := f.s.ArrayElements(f.ctx, "arr1")
	f.must(err, "elements")
	if len(members) != 5 {
		t.Fatalf("%d elements, want 5", len(members))
	}
	for i, m := range members {
		if m.Array != "arr1" || m.ArrayIndex != i || m.Name != fmt.Sprintf("sweep[%d]", i) || m.Status != domain.SessionPending {
			t.Errorf("element %d = %s %q array %q index %d %s", i, m.ID, m.Name, m.Array, m.ArrayIndex, m.Status)
		}
	}
	// An element is an ordinary session, named name[i], with its env.
	if s := f.get("arr1-3").Session; s.Env[domain.EnvArrayIndex] != "3" || s.Array != "arr1" {
		t.Errorf("element 3 read as a session: env %v array %q", s.Env, s.Array)
	}
	named, err := f.s.ListSessions(f.ctx, store.SessionFilter{User: "alice", Name: "sweep[3]"})
	f.must(err, "list by element name")
	wantIDs(t, named, sessionID, []domain.SessionID{"arr1-3"})

	other, otherElems := f.buildArray("arr2", "grid", "bob", 1, 0)
	f.must(f.s.CreateArray(f.ctx, other, otherElems), "create bob's array")
	for _, c := range []struct {
		f    store.ArrayFilter
		want []domain.ArrayID
	}{{store.ArrayFilter{}, []domain.ArrayID{"arr2", "arr1"}}, {store.ArrayFilter{User: "alice"}, []domain.ArrayID{"arr1"}},
		{store.ArrayFilter{Name: "grid"}, []domain.ArrayID{"arr2"}}, {store.ArrayFilter{IDPrefix: "arr1"}, []domain.ArrayID{"arr1"}},
		{store.ArrayFilter{Limit: 1}, []domain.ArrayID{"arr2"}}} {
		list, err := f.s.ListArrays(f.ctx, c.f)
		f.must(err, "list arrays")
		if diff := cmp.Diff(c.want, idsOf(list, func(a domain.Array) domain.ArrayID { return a.ID })); diff != "" {
			t.Errorf("ListArrays(%+v) (-want +got):\n%s", c.f, diff)
		}
	}

	// The snapshot carries the cap of an array with a pending element,
	// and counts the elements that hold resources.
	f.schedule("default", f.get("arr1-0"), "a1")
	snap, err := f.s.LoadSnapshot(f.ctx, "default", at(5))
	f.must(err, "snapshot")
	if got, want := snap.Arrays["arr1"], (struct {
		Name             string
		MaxRunning, Runs int
	}{"sweep", 2, 1}); got.Name != want.Name || got.MaxRunning != want.MaxRunning || got.Running != want.Runs {
		t.Errorf("snapshot array = %+v, want %+v", got, want)
	}
	if _, ok := snap.Arrays["arr2"]; ok {
		t.Errorf("an uncapped array is in the snapshot's caps")
	}

	// The summary counts by status and by outcome.
	f.advance("arr1-0", domain.SessionRunning)
	cancel := func(ids ...domain.SessionID) {
		_, err := f.s.TransitionSessions(f.ctx, ids, []domain.SessionStatus{domain.SessionPending},
			domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "cancelled", at(30))
		f.must(err, "cancel %v", ids)
	}
	cancel("arr1-4")
	sums, err := f.s.ArraySummaries(f.ctx, []domain.ArrayID{"arr1", "arr2", "nope"})
	f.must(err, "summaries")
	wantStatus := map[domain.SessionStatus]int{domain.SessionPending: 3, domain.SessionRunning: 1, domain.SessionCancelled: 1}
	if diff := cmp.Diff(wantStatus, sums["arr1"].ByStatus); diff != "" {
		t.Errorf("arr1 by status (-want +got):\n%s", diff)
	}
	if got := sums["arr1"].ByOutcome[domain.OutcomeCancelled]; got != 1 {
		t.Errorf("arr1 cancelled outcomes = %d, want 1", got)
	}
	if got := sums["arr2"].ByStatus[domain.SessionPending]; got != 1 {
		t.Errorf("arr2 pending = %d, want 1", got)
	}
	if _, ok := sums["nope"]; ok {
		t.Errorf("a missing array has a summary")
	}
	f.invariant()
}

func testArrayRefusals(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("default")
	arr, elems := f.buildArray("arr1", "sweep", "alice", 5, 0)
	f.must(f.s.CreateArray(f.ctx, arr, elems), "create array")
	count := func() int {
		t.Helper()
		all, err := f.s.ListSessions(f.ctx, store.SessionFilter{})
		f.must(err, "list sessions")
		return len(all)
	}
	refused := func(what string, a domain.Array, el []store.NewSession, want error, limits ...store.PendingLimit) {
		t.Helper()
		before := count()
		if err := f.s.CreateArray(f.ctx, a, el, limits...); !errors.Is(err, want) {
			t.Fatalf("%s: %v; want %v", what, err, want)
		}
		if _, err := f.s.GetArray(f.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the refused array was stored (%v)", what, err)
		}
		if n := count(); n != before {
			t.Errorf("%s: %d sessions after, %d before", what, n, before)
		}
	}
	// A live array's name is taken, for arrays and sessions alike.
	dup, dupElems := f.buildArray("arr2", "sweep", "alice", 2, 0)
	refused("the same name", dup, dupElems, store.ErrNameTaken)
	s, k := f.build("plain", "default", "alice", 1, []string{"cpu=1"}, func(s *domain.Session) { s.Name = "sweep" })
	if err := f.s.CreateSession(f.ctx, s, k); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("a session named as a live array: %v; want ErrNameTaken", err)
	}
	f.session("solo", "default", "alice", 1, []string{"cpu=1"})
	onSession, onElems := f.buildArray("arr3", "solo", "alice", 2, 0)
	refused("an array named as a live session", onSession, onElems, store.ErrNameTaken)
	// Another owner may use the name.
	bobs, bobElems := f.buildArray("arr4", "sweep", "bob", 2, 0)
	f.must(f.s.CreateArray(f.ctx, bobs, bobElems), "bob's sweep")

	// A pending limit counts every element: alice has 6 pending, so an
	// array of 2 under a limit of 7 is refused whole, one of 1 is not.
	limit := store.PendingLimit{Scope: domain.ScopeUser, Name: "alice", Max: 7}
	big, bigElems := f.buildArray("arr5", "big", "alice", 2, 0)
	refused("past the pending limit", big, bigElems, store.ErrLimitReached, limit)
	small, smallElems := f.buildArray("arr6", "small", "alice", 1, 0)
	f.must(f.s.CreateArray(f.ctx, small, smallElems, limit), "an array within the limit")

	// Elements that do not match their array are a caller's fault.
	bad, badElems := f.buildArray("arr7", "bad", "alice", 2, 0)
	refused("a count that is not the elements'", domain.Array{ID: bad.ID, Name: bad.Name, Owner: bad.Owner, Count: 3},
		badElems, store.ErrInvalid)

	// Once every element has ended, the name is free again.
	var ids []domain.SessionID
	for _, e := range elems {
		ids = append(ids, e.Session.ID)
	}
	_, err := f.s.TransitionSessions(f.ctx, ids, []domain.SessionStatus{domain.SessionPending},
		domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "cancelled", at(30))
	f.must(err, "cancel the array")
	again, againElems := f.buildArray("arr8", "sweep", "alice", 2, 0)
	f.must(f.s.CreateArray(f.ctx, again, againElems), "the name again once the array ended")
}
