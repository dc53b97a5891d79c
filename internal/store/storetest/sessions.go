package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

func testSessionRoundTrip(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	dep := f.session("dep", "g", "alice", 1, []string{"cpu", "1"})
	s := domain.Session{
		ID: "s1", Name: "train", Owner: domain.Owner{User: "alice", Project: "vision", Domain: "lab"},
		Type: domain.TypeInference, Image: "python:3.13", Architecture: "aarch64", ResourceGroup: "g",
		ClusterMode: domain.MultiNode, ClusterSize: 2, Priority: 7,
		Requested: f.slots("cpu", "1.5", "mem", "4g", "cuda.shares", "0.25"),
		// Ignored on creation: a new session is PENDING since its creation.
		Status: domain.SessionRunning, StatusChangedAt: at(99), Outcome: domain.OutcomeSuccess,
		StatusReason: "queued", CreatedAt: at(3), StartsAt: at(3600),
		DependsOn: []domain.SessionID{dep.Session.ID}, DesignatedAgents: []domain.AgentID{"a1", "a2"},
		DesignatedStrict: true, AvoidAgents: []domain.AgentID{"a3"},
		Command: []string{"python", "-m", "serve"}, Env: map[string]string{"A": "1", "B": "two"},
	}
	exit := 3
	kernels := []domain.Kernel{
		{ID: "s1-main", ClusterRole: domain.RoleMain, ClusterIdx: 0, Image: "python:3.13", Architecture: "aarch64",
			Requested: s.Requested.Clone(), Status: domain.KernelRunning, ContainerID: "c0", ExitCode: &exit},
		{ID: "s1-sub", SessionID: "s1", ClusterRole: domain.RoleSub, ClusterIdx: 1, Image: "python:3.13",
			Architecture: "aarch64", Requested: f.slots("cpu", "1")},
	}
	f.must(f.s.CreateSession(f.ctx, s, kernels), "create")

	want := s
	want.Status, want.StatusChangedAt, want.Outcome = domain.SessionPending, at(3), domain.OutcomeNone
	wantKernels := []domain.Kernel{kernels[0], kernels[1]}
	for i := range wantKernels {
		k := &wantKernels[i]
		// Container ids and exit codes come from agents, later.
		k.SessionID, k.Status, k.StatusChangedAt, k.ContainerID, k.ExitCode = "s1", domain.KernelPending, at(3), "", nil
	}
	got := f.get("s1")
	if diff := cmp.Diff(store.SessionWithKernels{Session: want, Kernels: wantKernels}, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	_, err := f.s.GetSession(f.ctx, "nope")
	wantErr(t, err, store.ErrNotFound, "get missing session")
	f.invariant()
}

func testListSessionsAndKernels(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.group("g2")
	f.agent("a1", "g1", []string{"cpu", "8"})
	mk := func(id, group, user string, created int) {
		f.session(id, group, user, 1, []string{"cpu", "1"}, func(s *domain.Session) { s.CreatedAt = at(created) })
	}
	mk("s3", "g1", "alice", 3)
	mk("s1", "g1", "alice", 1)
	mk("s2", "g2", "bob", 2)
	mk("s4", "g1", "bob", 4)
	f.schedule("g1", f.get("s4"), "a1")

	for _, tc := range []struct {
		name   string
		filter store.SessionFilter
		want   []domain.SessionID
	}{
		{"all oldest first", store.SessionFilter{}, []domain.SessionID{"s1", "s2", "s3", "s4"}},
		{"status", store.SessionFilter{Statuses: []domain.SessionStatus{domain.SessionPending}}, []domain.SessionID{"s1", "s2", "s3"}},
		{"statuses", store.SessionFilter{Statuses: []domain.SessionStatus{domain.SessionScheduled, domain.SessionRunning}}, []domain.SessionID{"s4"}},
		{"user", store.SessionFilter{User: "bob"}, []domain.SessionID{"s2", "s4"}},
		{"project", store.SessionFilter{Project: "p-alice"}, []domain.SessionID{"s1", "s3"}},
		{"domain", store.SessionFilter{Domain: "other"}, nil},
		{"group", store.SessionFilter{Group: "g1"}, []domain.SessionID{"s1", "s3", "s4"}},
		{"limit", store.SessionFilter{Group: "g1", Limit: 2}, []domain.SessionID{"s1", "s3"}},
		{"ids", store.SessionFilter{IDs: []domain.SessionID{"s4", "s1", "ghost"}}, []domain.SessionID{"s1", "s4"}},
		{"ids and status", store.SessionFilter{IDs: []domain.SessionID{"s4", "s1"},
			Statuses: []domain.SessionStatus{domain.SessionPending}}, []domain.SessionID{"s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := f.s.ListSessions(f.ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			wantIDs(t, list, sessionID, tc.want)
		})
	}
	for _, tc := range []struct {
		name   string
		filter store.KernelFilter
		want   []domain.KernelID
	}{
		{"all", store.KernelFilter{}, []domain.KernelID{"s1-k0", "s2-k0", "s3-k0", "s4-k0"}},
		{"sessions", store.KernelFilter{Sessions: []domain.SessionID{"s2", "s3"}}, []domain.KernelID{"s2-k0", "s3-k0"}},
		{"agent", store.KernelFilter{Agents: []domain.AgentID{"a1"}}, []domain.KernelID{"s4-k0"}},
		{"status", store.KernelFilter{Statuses: []domain.KernelStatus{domain.KernelPending}}, []domain.KernelID{"s1-k0", "s2-k0", "s3-k0"}},
		{"ids", store.KernelFilter{IDs: []domain.KernelID{"s4-k0", "s1-k0", "ghost"}}, []domain.KernelID{"s1-k0", "s4-k0"}},
		{"ids and status", store.KernelFilter{IDs: []domain.KernelID{"s4-k0", "s1-k0"},
			Statuses: []domain.KernelStatus{domain.KernelScheduled}}, []domain.KernelID{"s4-k0"}},
	} {
		t.Run("kernels "+tc.name, func(t *testing.T) {
			list, err := f.s.ListKernels(f.ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			wantIDs(t, list, kernelID, tc.want)
		})
	}
	f.invariant()
}

func testCreateSessionErrors(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.session("taken", "g", "alice", 1, []string{"cpu", "1"})
	valid := func() (domain.Session, []domain.Kernel) {
		s := domain.Session{ID: "new", Owner: domain.Owner{User: "alice"}, Type: domain.TypeBatch, ResourceGroup: "g",
			ClusterMode: domain.MultiNode, ClusterSize: 2, Requested: f.slots("cpu", "1"), CreatedAt: at(1)}
		return s, []domain.Kernel{
			{ID: "new-0", ClusterRole: domain.RoleMain, ClusterIdx: 0, Requested: f.slots("cpu", "1")},
			{ID: "new-1", ClusterRole: domain.RoleSub, ClusterIdx: 1, Requested: f.slots("cpu", "1")},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(s *domain.Session, ks []domain.Kernel) []domain.Kernel
		want   error
	}{
		{"duplicate session id", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { s.ID = "taken"; return ks }, store.ErrConflict},
		{"duplicate kernel id", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { ks[1].ID = "taken-k0"; return ks }, store.ErrConflict},
		{"duplicate cluster index", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { ks[1].ClusterIdx = 0; return ks }, store.ErrConflict},
		{"unknown group", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { s.ResourceGroup = "nowhere"; return ks }, store.ErrNotFound},
		{"unknown dependency", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel {
			s.DependsOn = []domain.SessionID{"taken", "ghost"}
			return ks
		}, store.ErrNotFound},
		{"depends on itself", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel {
			s.DependsOn = []domain.SessionID{s.ID}
			return ks
		}, store.ErrInvalid},
		{"no kernels", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { return nil }, store.ErrInvalid},
		{"size mismatch", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { return ks[:1] }, store.ErrInvalid},
		{"kernel of another session", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { ks[0].SessionID = "taken"; return ks }, store.ErrInvalid},
		{"kernel already placed", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { ks[0].Agent = "a1"; return ks }, store.ErrInvalid},
		{"no creation time", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel {
			s.CreatedAt = domain.Session{}.CreatedAt
			return ks
		}, store.ErrInvalid},
		{"unknown type", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { s.Type = "daemon"; return ks }, store.ErrInvalid},
		{"no owner", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { s.Owner.User = ""; return ks }, store.ErrInvalid},
		{"negative cluster index", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel { ks[1].ClusterIdx = -1; return ks }, store.ErrInvalid},
		{"slot vector too long", func(s *domain.Session, ks []domain.Kernel) []domain.Kernel {
			ks[1].Requested = make(domain.Vec, f.reg.Len()+2)
			return ks
		}, store.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ks := valid()
			ks = tc.change(&s, ks)
			wantErr(t, f.s.CreateSession(f.ctx, s, ks), tc.want, "create")
			// Nothing of the refused session was kept.
			if _, err := f.s.GetSession(f.ctx, s.ID); s.ID != "taken" && err == nil {
				t.Errorf("session %s exists after a refused create", s.ID)
			}
			ks2, err := f.s.ListKernels(f.ctx, store.KernelFilter{Sessions: []domain.SessionID{"new"}})
			if err != nil || len(ks2) != 0 {
				t.Errorf("kernels of the refused session: %v, %v", ks2, err)
			}
		})
	}
	s, ks := valid()
	f.must(f.s.CreateSession(f.ctx, s, ks), "the valid session after the refused ones")
	f.invariant()
}

func testAvoidAgents(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.session("s1", "g", "alice", 1, []string{"cpu", "1"}, func(s *domain.Session) {
		s.AvoidAgents = []domain.AgentID{"a1"}
	})
	f.must(f.s.AvoidAgents(f.ctx, "s1", []domain.AgentID{"a2", "a1", "a3", "a2"}), "avoid")
	f.must(f.s.AvoidAgents(f.ctx, "s1", nil), "avoid nothing")
	want := []domain.AgentID{"a1", "a2", "a3"}
	if diff := cmp.Diff(want, f.get("s1").Session.AvoidAgents); diff != "" {
		t.Errorf("avoid list (-want +got):\n%s", diff)
	}
	// Concurrent additions from two instances are all kept.
	other := f.open(Options{Registry: f.reg})
	var wg sync.WaitGroup
	for i := range 6 {
		st := f.s
		if i%2 == 1 {
			st = other
		}
		wg.Go(func() {
			if err := st.AvoidAgents(f.ctx, "s1", []domain.AgentID{domain.AgentID(fmt.Sprintf("b%d", i))}); err != nil {
				t.Errorf("avoid b%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if got := f.get("s1").Session.AvoidAgents; len(got) != 9 {
		t.Errorf("after concurrent additions: %v, want 9 agents", got)
	}
	wantErr(t, f.s.AvoidAgents(f.ctx, "ghost", []domain.AgentID{"a1"}), store.ErrNotFound, "unknown session")
	f.invariant()
}

// testPendingLimit: a limit is exact while two store instances (two
// managers) create sessions under it at once.
func testPendingLimit(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	stores := []store.Store{f.s, f.open(Options{Registry: f.reg})}
	const submits, max = 24, 5
	// Alice's project is the tighter limit; her own is not reached first.
	limits := []store.PendingLimit{
		{Scope: domain.ScopeUser, Name: "alice", Max: 100},
		{Scope: domain.ScopeProject, Name: "p-alice", Max: max},
	}
	errs := make([]error, submits)
	var wg sync.WaitGroup
	for i := range submits {
		s, ks := f.build(fmt.Sprintf("s%02d", i), "g", "alice", 2, []string{"cpu", "1"})
		wg.Go(func() { errs[i] = stores[i%2].CreateSession(f.ctx, s, ks, limits...) })
	}
	wg.Wait()
	created, refused := 0, 0
	for i, err := range errs {
		var le *store.LimitError
		switch {
		case err == nil:
			created++
		case errors.As(err, &le) && errors.Is(err, store.ErrLimitReached):
			refused++
			if le.Limit != limits[1] || le.Pending != max {
				t.Errorf("submit %d refused with %+v, want project p-alice's limit with %d pending", i, le, max)
			}
		default:
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	if created != max || refused != submits-max {
		t.Errorf("%d concurrent submits under a limit of %d: %d created, %d refused", submits, max, created, refused)
	}
	pending, err := f.s.ListSessions(f.ctx, store.SessionFilter{Project: "p-alice", Statuses: []domain.SessionStatus{domain.SessionPending}})
	f.must(err, "list pending")
	kernels, err := f.s.ListKernels(f.ctx, store.KernelFilter{})
	f.must(err, "list kernels")
	if len(pending) != max || len(kernels) != 2*max {
		t.Errorf("stored %d pending sessions and %d kernels, want %d and %d", len(pending), len(kernels), max, 2*max)
	}

	// Others are not capped by it; a session that leaves PENDING frees its
	// place.
	s, ks := f.build("bob-1", "g", "bob", 1, nil)
	f.must(f.s.CreateSession(f.ctx, s, ks, store.PendingLimit{Scope: domain.ScopeProject, Name: "p-bob", Max: 1}), "bob's first")
	_, err = f.s.TransitionSessions(f.ctx, []domain.SessionID{pending[0].ID}, []domain.SessionStatus{domain.SessionPending},
		domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "cancelled", at(5))
	f.must(err, "cancel one")
	s, ks = f.build("after-cancel", "g", "alice", 1, nil)
	f.must(f.s.CreateSession(f.ctx, s, ks, limits...), "a submit after one was cancelled")

	for _, bad := range []store.PendingLimit{
		{Scope: "team", Name: "x", Max: 1},
		{Scope: domain.ScopeUser, Name: "", Max: 1},
		{Scope: domain.ScopeUser, Name: "alice", Max: 0},
	} {
		s, ks := f.build("bad", "g", "alice", 1, nil)
		wantErr(t, f.s.CreateSession(f.ctx, s, ks, bad), store.ErrInvalid, fmt.Sprintf("limit %+v", bad))
	}
	f.invariant()
}

// testSessionSpecs: a session's command and environment are read where
// kernels are created (SessionSpecs) and where one session is shown
// (GetSession), never by listings or the scheduler's snapshot.
func testSessionSpecs(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	big := map[string]string{}
	for i := range 16 {
		big[fmt.Sprintf("VAR_%02d", i)] = strings.Repeat("x", 4<<10)
	}
	want := store.SessionSpec{Command: []string{"python", "-m", "train"}, Env: big}
	f.session("with", "g", "alice", 2, []string{"cpu", "1"}, func(s *domain.Session) {
		s.Command, s.Env = want.Command, want.Env
	})
	f.session("without", "g", "alice", 1, []string{"cpu", "1"})

	listed, err := f.s.ListSessions(f.ctx, store.SessionFilter{})
	f.must(err, "list sessions")
	snap, err := f.s.LoadSnapshot(f.ctx, "g", at(2))
	f.must(err, "load snapshot")
	for _, p := range snap.Pending {
		listed = append(listed, p.Session)
	}
	if len(listed) != 4 {
		t.Fatalf("listed and snapshot hold %d sessions, want 4", len(listed))
	}
	for _, s := range listed {
		if s.Command != nil || s.Env != nil {
			t.Errorf("session %s was read with its command %q and %d environment variables", s.ID, s.Command, len(s.Env))
		}
	}

	got := f.get("with").Session
	if diff := cmp.Diff(want, store.SessionSpec{Command: got.Command, Env: got.Env}); diff != "" {
		t.Errorf("GetSession's command and env (-want +got):\n%s", diff)
	}
	specs, err := f.s.SessionSpecs(f.ctx, []domain.SessionID{"with", "without", "missing"})
	f.must(err, "session specs")
	if diff := cmp.Diff(map[domain.SessionID]store.SessionSpec{"with": want, "without": {}}, specs); diff != "" {
		t.Errorf("SessionSpecs (-want +got):\n%s", diff)
	}
	specs, err = f.s.SessionSpecs(f.ctx, nil)
	if err != nil || len(specs) != 0 {
		t.Errorf("SessionSpecs of no sessions: %v, %v", specs, err)
	}
}

// testListSessionsPages: After pages a listing in its order, ties in
// creation time broken by id, and keeps the other filters.
func testListSessionsPages(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	for i, id := range []string{"e", "b", "d", "a", "c", "f"} {
		created := at(10 + i/2) // two at each time: ties
		f.session(id, "g", "alice", 1, []string{"cpu", "1"}, func(s *domain.Session) { s.CreatedAt = created })
	}
	f.session("bob", "g", "bob", 1, []string{"cpu", "1"}, func(s *domain.Session) { s.CreatedAt = at(11) })
	got := f.pages(store.SessionFilter{User: "alice"}, func(page int) int { return 4 - page%2*2 })
	if diff := cmp.Diff([]domain.SessionID{"b", "e", "a", "d", "c", "f"}, got); diff != "" {
		t.Errorf("alice's sessions page by page (-want +got):\n%s", diff)
	}
	list, err := f.s.ListSessions(f.ctx, store.SessionFilter{After: "missing"})
	if err != nil || len(list) != 0 {
		t.Errorf("after a session that does not exist: %d sessions, %v", len(list), err)
	}
}

// testSessionNames: a name is unique among an owner's live sessions, so
// it can stand for the session; ended sessions free it.
func testSessionNames(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	named := func(name string) func(*domain.Session) { return func(s *domain.Session) { s.Name = name } }
	f.session("s1", "g", "alice", 1, []string{"cpu", "1"}, named("train"))

	s, k := f.build("s2", "g", "alice", 1, []string{"cpu", "1"}, named("train"))
	err := f.s.CreateSession(f.ctx, s, k)
	wantErr(t, err, store.ErrNameTaken, "second live session named train")
	wantErr(t, err, store.ErrConflict, "a taken name is a conflict")
	if _, err := f.s.GetSession(f.ctx, "s2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("refused session was stored: %v", err)
	}
	f.session("s3", "g", "bob", 1, []string{"cpu", "1"}, named("train")) // another owner
	f.session("s4", "g", "alice", 1, []string{"cpu", "1"}, named(""))
	f.session("s5", "g", "alice", 1, []string{"cpu", "1"}, named("")) // no name is no name

	_, err = f.s.TransitionSessions(f.ctx, []domain.SessionID{"s1"}, []domain.SessionStatus{domain.SessionPending},
		domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "", at(5))
	f.must(err, "cancel s1")
	f.session("s6", "g", "alice", 1, []string{"cpu", "1"}, named("train")) // s1 ended: the name is free

	// Creations of one name race: exactly one wins, whatever the engine.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, k := f.build(fmt.Sprintf("race%d", i), "g", "carol", 1, []string{"cpu", "1"}, named("same"))
			errs[i] = f.s.CreateSession(f.ctx, s, k)
		}()
	}
	wg.Wait()
	won := winners(t, "racing creation", errs, store.ErrNameTaken, store.ErrConflict)
	if won != 1 {
		t.Errorf("%d racing creations of one name won, want 1", won)
	}
	f.invariant()
}

// testListSessionsFilters covers the filters a person lists by and the
// newest-first order, paged.
func testListSessionsFilters(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	mk := func(id, user string, created int, mods ...func(*domain.Session)) {
		mods = append(mods, func(s *domain.Session) { s.CreatedAt = at(created) })
		f.session(id, "g", user, 1, []string{"cpu", "1"}, mods...)
	}
	inter := func(s *domain.Session) { s.Type = domain.TypeInteractive }
	mk("abc111", "alice", 1)
	mk("abc222", "alice", 2, inter)
	mk("abd333", "alice", 3)
	mk("abc444", "bob", 4)
	mk("old", "alice", 0)
	// old ended at 10, abd333 at 30.
	cancel := func(id domain.SessionID, when int) {
		_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{id}, []domain.SessionStatus{domain.SessionPending},
			domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "", at(when))
		f.must(err, "cancel %s", id)
	}
	cancel("old", 10)
	cancel("abd333", 30)

	for _, tc := range []struct {
		name   string
		filter store.SessionFilter
		want   []domain.SessionID
	}{
		{"name", store.SessionFilter{Name: "abc222"}, []domain.SessionID{"abc222"}},
		{"prefix", store.SessionFilter{IDPrefix: "abc"}, []domain.SessionID{"abc111", "abc222", "abc444"}},
		{"prefix of a user", store.SessionFilter{IDPrefix: "abc", User: "alice"}, []domain.SessionID{"abc111", "abc222"}},
		{"prefix is not a pattern", store.SessionFilter{IDPrefix: "ab_"}, nil},
		{"type", store.SessionFilter{Types: []domain.SessionType{domain.TypeInteractive}}, []domain.SessionID{"abc222"}},
		// Live sessions stay whatever the time; ended ones only when they
		// ended at or after it.
		{"ended since 20", store.SessionFilter{EndedSince: at(20)}, []domain.SessionID{"abc111", "abc222", "abd333", "abc444"}},
		{"ended since 31", store.SessionFilter{EndedSince: at(31)}, []domain.SessionID{"abc111", "abc222", "abc444"}},
		{"newest first", store.SessionFilter{Newest: true}, []domain.SessionID{"abc444", "abd333", "abc222", "abc111", "old"}},
		{"newest limit", store.SessionFilter{Newest: true, Limit: 2}, []domain.SessionID{"abc444", "abd333"}},
		{"newest after", store.SessionFilter{Newest: true, After: "abd333"}, []domain.SessionID{"abc222", "abc111", "old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := f.s.ListSessions(f.ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			wantIDs(t, list, sessionID, tc.want)
		})
	}

	// Paging newest first with ties on created_at loses and repeats
	// nothing.
	for i, id := range []string{"t-e", "t-b", "t-d", "t-a", "t-c"} {
		mk(id, "dave", 50+i/2)
	}
	got := f.pages(store.SessionFilter{User: "dave", Newest: true}, func(int) int { return 2 })
	if diff := cmp.Diff([]domain.SessionID{"t-c", "t-d", "t-a", "t-e", "t-b"}, got); diff != "" {
		t.Errorf("dave's sessions newest first, page by page (-want +got):\n%s", diff)
	}
}
