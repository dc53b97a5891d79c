package storetest

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

func testHistory(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.session("s1", "g", "alice", 1, []string{"cpu", "1"})
	f.session("s2", "g", "alice", 1, []string{"cpu", "1"})
	skipped := func(s domain.SessionID, sec int, msg string) domain.HistoryEntry {
		return domain.HistoryEntry{Subject: s, At: at(sec), Cause: domain.HandlerScheduleNewSessions,
			Result: domain.ResultSkipped, From: domain.SessionPending, To: domain.SessionPending, Message: msg}
	}
	scheduled := domain.HistoryEntry{Subject: "s1", At: at(9), Cause: domain.HandlerScheduleNewSessions,
		Result: domain.ResultSuccess, From: domain.SessionPending, To: domain.SessionScheduled}
	steps := [][]domain.HistoryEntry{
		{skipped("s1", 1, "no capacity")},
		{skipped("s1", 2, "no capacity")}, // merges: attempt 2 at 2
		{skipped("s1", 3, "no capacity"), skipped("s2", 3, "quota"), skipped("s2", 4, "quota")},
		{skipped("s1", 5, "quota")}, // a different message starts a new entry
		{scheduled},
		{skipped("s1", 10, "quota")}, // same as an older entry, not the latest
	}
	for i, batch := range steps {
		f.must(f.s.AppendHistory(f.ctx, batch), "append batch %d", i)
	}
	withAttempt := func(h domain.HistoryEntry, n int) domain.HistoryEntry { h.Attempt = n; return h }
	want := map[domain.SessionID][]domain.HistoryEntry{
		"s1": {
			withAttempt(skipped("s1", 3, "no capacity"), 3),
			withAttempt(skipped("s1", 5, "quota"), 1),
			withAttempt(scheduled, 1),
			withAttempt(skipped("s1", 10, "quota"), 1),
		},
		"s2": {withAttempt(skipped("s2", 4, "quota"), 2)},
	}
	for id, w := range want {
		got, err := f.s.History(f.ctx, id)
		f.must(err, "history of %s", id)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("history of %s (-want +got):\n%s", id, diff)
		}
	}
	got, err := f.s.History(f.ctx, "ghost")
	if err != nil || len(got) != 0 {
		t.Errorf("history of an unknown session: %v, %v", got, err)
	}
	wantErr(t, f.s.AppendHistory(f.ctx, []domain.HistoryEntry{skipped("ghost", 1, "x")}), store.ErrNotFound, "history of unknown session")
	bad := skipped("s1", 11, "x")
	bad.Result = "MAYBE"
	wantErr(t, f.s.AppendHistory(f.ctx, []domain.HistoryEntry{bad}), store.ErrInvalid, "unknown result")
	if got, _ := f.s.History(f.ctx, "s1"); len(got) != 4 {
		t.Errorf("a refused batch left %d entries, want 4", len(got))
	}
	f.invariant()
}

func testTries(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.session("s1", "g", "alice", 1, []string{"cpu", "1"})
	f.session("s2", "g", "alice", 1, []string{"cpu", "1"})
	prep, start := domain.HandlerPrepareSessions, domain.HandlerStartSessions
	inc := func(phase domain.HandlerName, ids ...domain.SessionID) map[domain.SessionID]int {
		t.Helper()
		got, err := f.s.IncrementTries(f.ctx, phase, ids)
		f.must(err, "increment %s %v", phase, ids)
		return got
	}
	for i, tc := range []struct {
		got, want map[domain.SessionID]int
	}{
		{inc(prep, "s1", "s2"), map[domain.SessionID]int{"s1": 1, "s2": 1}},
		{inc(prep, "s1", "s1"), map[domain.SessionID]int{"s1": 2}}, // one try per call
		{inc(start, "s1"), map[domain.SessionID]int{"s1": 1}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
	tries, err := f.s.Tries(f.ctx, "s1")
	f.must(err, "tries")
	if diff := cmp.Diff(map[domain.HandlerName]int{prep: 2, start: 1}, tries); diff != "" {
		t.Errorf("tries (-want +got):\n%s", diff)
	}
	f.must(f.s.ResetTries(f.ctx, prep, []domain.SessionID{"s1", "ghost"}), "reset")
	tries, err = f.s.Tries(f.ctx, "s1")
	f.must(err, "tries after reset")
	if diff := cmp.Diff(map[domain.HandlerName]int{start: 1}, tries); diff != "" {
		t.Errorf("after reset (-want +got):\n%s", diff)
	}
	if got := inc(prep, "s1"); got["s1"] != 1 {
		t.Errorf("after reset the count starts again at 1, got %d", got["s1"])
	}
	_, err = f.s.IncrementTries(f.ctx, prep, []domain.SessionID{"ghost"})
	wantErr(t, err, store.ErrNotFound, "tries of unknown session")
	f.invariant()
}

// testSessionsMatching compares the SQL form of seed 001's ALL, ANY and
// NOT_ANY with domain.Match.Holds over sessions in many kernel mixes.
func testSessionsMatching(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "64"})
	type step struct {
		kernel int
		from   domain.KernelStatus
		to     domain.KernelStatus
	}
	build := func(id string, at domain.SessionStatus, steps ...step) {
		s := f.session(id, "g", "alice", 2, []string{"cpu", "1"})
		if at != domain.SessionPending {
			f.schedule("g", s, "a1")
			f.advance(s.Session.ID, at)
		}
		for _, st := range steps {
			f.kernel(s.Kernels[st.kernel].ID, st.from, st.to)
		}
	}
	build("pending", domain.SessionPending)
	build("sched-both", domain.SessionScheduled)
	build("prep-half", domain.SessionPreparing, step{0, domain.KernelPreparing, domain.KernelPrepared})
	build("prep-pulling", domain.SessionPreparing, step{0, domain.KernelPreparing, domain.KernelPulling},
		step{1, domain.KernelPreparing, domain.KernelPrepared})
	build("prep-done", domain.SessionPreparing, step{0, domain.KernelPreparing, domain.KernelPrepared},
		step{1, domain.KernelPreparing, domain.KernelPrepared})
	build("creating-half", domain.SessionCreating, step{0, domain.KernelCreating, domain.KernelRunning})
	build("creating-done", domain.SessionCreating, step{0, domain.KernelCreating, domain.KernelRunning},
		step{1, domain.KernelCreating, domain.KernelRunning})
	build("running", domain.SessionRunning)
	build("running-exited", domain.SessionRunning, step{1, domain.KernelRunning, domain.KernelTerminated})
	build("term-half", domain.SessionTerminating, step{0, domain.KernelTerminating, domain.KernelTerminated})
	build("term-done", domain.SessionTerminating, step{0, domain.KernelTerminating, domain.KernelTerminated},
		step{1, domain.KernelTerminating, domain.KernelError})

	sessions, err := f.s.ListSessions(f.ctx, store.SessionFilter{})
	f.must(err, "list sessions")
	kernels := map[domain.SessionID][]domain.KernelStatus{}
	all, err := f.s.ListKernels(f.ctx, store.KernelFilter{})
	f.must(err, "list kernels")
	for _, k := range all {
		kernels[k.SessionID] = append(kernels[k.SessionID], k.Status)
	}
	type query struct {
		name     string
		sessions []domain.SessionStatus
		check    []domain.KernelStatus
		match    domain.Match
	}
	var queries []query
	for _, h := range domain.PromotionHandlers() {
		queries = append(queries, query{string(h.Name), h.TargetSession, h.CheckKernel, h.Match})
	}
	active := []domain.SessionStatus{domain.SessionScheduled, domain.SessionPreparing, domain.SessionCreating,
		domain.SessionRunning, domain.SessionTerminating}
	queries = append(queries,
		query{"all prepared", active, []domain.KernelStatus{domain.KernelPrepared}, domain.MatchAll},
		query{"all running or ended", active, []domain.KernelStatus{domain.KernelRunning, domain.KernelTerminated}, domain.MatchAll},
		query{"any pulling", active, []domain.KernelStatus{domain.KernelPulling}, domain.MatchAny},
	)
	for _, q := range queries {
		t.Run(q.name, func(t *testing.T) {
			var want []domain.SessionID
			for _, s := range sessions {
				if slices.Contains(q.sessions, s.Status) && q.match.Holds(kernels[s.ID], q.check) {
					want = append(want, s.ID)
				}
			}
			slices.Sort(want)
			got, err := f.s.SessionsMatching(f.ctx, q.sessions, q.check, q.match)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// Narrowed to every other session, and one that does not
			// exist: the same answer, less what was left out.
			among := []domain.SessionID{"ghost"}
			for i, s := range sessions {
				if i%2 == 0 {
					among = append(among, s.ID)
				}
			}
			got, err = f.s.SessionsMatching(f.ctx, q.sessions, q.check, q.match, among...)
			if err != nil {
				t.Fatal(err)
			}
			want = slices.DeleteFunc(want, func(id domain.SessionID) bool { return !slices.Contains(among, id) })
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("among %v (-want +got):\n%s", among, diff)
			}
		})
	}
	_, err = f.s.SessionsMatching(f.ctx, active, nil, domain.Match(0))
	wantErr(t, err, store.ErrInvalid, "unknown match")
	f.invariant()
}
