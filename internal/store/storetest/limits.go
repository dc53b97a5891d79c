package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testTimeLimits: limits round-trip on groups and sessions; DueSessions
// finds exactly the RUNNING sessions past their limit or idle past their
// group's timeout, counting from when they started running (at(20) in
// advance); TransitionSessions with Fail fixes the outcome at failure even when every
// kernel then exits 0; TouchSession never moves activity back; NextDue is
// the next instant DueSessions finds more, or a drain deadline passes.
func testTimeLimits(t *testing.T, e Engine) {
	f := newFixture(t, e)
	g := f.group("g", func(g *domain.ResourceGroup) {
		g.DefaultTimeLimit, g.MaxTimeLimit, g.IdleTimeout = time.Hour, 4*time.Hour, 10*time.Minute
	})
	got, err := f.s.GetResourceGroup(f.ctx, "g")
	f.must(err, "get group")
	if diff := cmp.Diff(g, got); diff != "" {
		t.Errorf("group (-want +got):\n%s", diff)
	}
	f.group("quiet") // no idle timeout
	f.agent("a1", "g", []string{"cpu", "64"})
	f.agent("a2", "quiet", []string{"cpu", "64"})

	runLimited(t, f, "limited", "quiet", domain.TypeBatch, time.Hour) // due at at(20)+1h
	runLimited(t, f, "unlimited", "quiet", domain.TypeBatch, 0)       // never due
	runLimited(t, f, "idle", "g", domain.TypeInteractive, 0)          // due at at(20)+10m
	runLimited(t, f, "busy", "g", domain.TypeInteractive, 0)          // touched at at(20)+9m: due at +19m
	runLimited(t, f, "batch-in-idle-group", "g", domain.TypeBatch, 0) // idleness does not apply to batch
	// Its kernel already ended: its own end is on its way, and a time
	// limit must not turn a clean finish into a failure.
	runLimited(t, f, "finished", "quiet", domain.TypeBatch, time.Hour)
	zero := 0
	f.kernel(f.get("finished").Kernels[0].ID, domain.KernelRunning, domain.KernelTerminated,
		func(u *store.KernelUpdate) { u.ExitCode = &zero })
	if s := f.get("limited").Session; s.TimeLimit != time.Hour {
		t.Fatalf("time limit %s, want 1h", s.TimeLimit)
	}
	f.must(f.s.TouchSession(f.ctx, "busy", at(20).Add(9*time.Minute)), "touch")
	f.must(f.s.TouchSession(f.ctx, "busy", at(20).Add(time.Minute)), "touch back") // ignored: earlier

	checkDueSessions(t, f)
	checkNextDue(t, f)
	ds, err := f.s.DueSessions(f.ctx, at(20).Add(time.Hour), nil)
	f.must(err, "due sessions")
	want := []store.DueSession{{ID: "limited", Type: domain.TypeBatch, ResourceGroup: "quiet", Started: at(20), TimeLimit: time.Hour}}
	if diff := cmp.Diff(want, ds); diff != "" {
		t.Errorf("due without idle types (-want +got):\n%s", diff)
	}
	checkFailedOutcome(t, f)
	f.invariant()
}

// runLimited makes a session of alice's of type typ and time limit limit
// RUNNING in group, from at(20).
func runLimited(t *testing.T, f *fixture, id, group string, typ domain.SessionType, limit time.Duration) {
	t.Helper()
	s := f.session(id, group, "alice", 1, []string{"cpu", "1"}, func(s *domain.Session) {
		s.Type, s.TimeLimit = typ, limit
	})
	agent := domain.AgentID("a1")
	if group == "quiet" {
		agent = "a2"
	}
	f.schedule(group, s, agent)
	f.advance(s.Session.ID, domain.SessionRunning)
}

// checkDueSessions: the due list grows as the idle timeout, the busy
// session's later idle timeout and the time limit pass.
func checkDueSessions(t *testing.T, f *fixture) {
	due := func(now time.Time) []domain.SessionID {
		t.Helper()
		ds, err := f.s.DueSessions(f.ctx, now, []domain.SessionType{domain.TypeInteractive})
		f.must(err, "due sessions")
		return idsOf(ds, func(d store.DueSession) domain.SessionID { return d.ID })
	}
	for _, tc := range []struct {
		name  string
		after time.Duration // since the sessions started running
		want  []domain.SessionID
	}{
		{"nothing yet", 9 * time.Minute, nil},
		{"idle reached", 10 * time.Minute, []domain.SessionID{"idle"}},
		{"busy idle too", 19 * time.Minute, []domain.SessionID{"busy", "idle"}},
		{"a second before the limit", time.Hour - time.Second, []domain.SessionID{"busy", "idle"}},
		{"limit reached", time.Hour, []domain.SessionID{"busy", "idle", "limited"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, due(at(20).Add(tc.after))); diff != "" {
				t.Errorf("due (-want +got):\n%s", diff)
			}
		})
	}
}

// checkNextDue: NextDue is when the first of those lists grows, and a
// drain's deadline counts too, rounded up to the microsecond: never
// before it.
func checkNextDue(t *testing.T, f *fixture) {
	t.Helper()
	f.must(f.s.DrainAgent(f.ctx, "a2", at(20), at(20).Add(30*time.Minute+500)), "drain")
	for _, tc := range []struct {
		after, want time.Duration // since the sessions started running; -1: none
	}{
		{0, 10 * time.Minute}, {10 * time.Minute, 19 * time.Minute}, {19 * time.Minute, 30*time.Minute + time.Microsecond},
		{30*time.Minute + time.Microsecond, time.Hour}, {time.Hour, -1},
	} {
		next, err := f.s.NextDue(f.ctx, at(20).Add(tc.after), []domain.SessionType{domain.TypeInteractive})
		f.must(err, "next due")
		want := time.Time{}
		if tc.want >= 0 {
			want = at(20).Add(tc.want)
		}
		if !next.Equal(want) {
			t.Errorf("next due after +%s: %v, want %v", tc.after, next, want)
		}
	}
	if next, err := f.s.NextDue(f.ctx, at(20).Add(19*time.Minute), nil); err != nil || !next.Equal(at(20).Add(30*time.Minute+time.Microsecond)) {
		t.Errorf("next due without idle types after +19m: %v (%v), want the drain's deadline", next, err)
	}
}

// checkFailedOutcome: failing sessions at their limit moves only the
// RUNNING ones, once, and the outcome stays failure though every kernel
// exits 0.
func checkFailedOutcome(t *testing.T, f *fixture) {
	t.Helper()
	now := at(20).Add(time.Hour)
	fail := func(ids ...domain.SessionID) ([]domain.SessionID, error) {
		return f.s.TransitionSessions(f.ctx, ids, []domain.SessionStatus{domain.SessionRunning},
			domain.Transition{Session: domain.SessionTerminating, Fail: true}, "time limit", now)
	}
	moved, err := fail("limited", "unlimited-not-here", "idle")
	f.must(err, "fail sessions")
	if diff := cmp.Diff([]domain.SessionID{"idle", "limited"}, moved); diff != "" {
		t.Errorf("moved (-want +got):\n%s", diff)
	}
	again, err := fail("limited")
	f.must(err, "fail again")
	if len(again) != 0 {
		t.Errorf("failed a TERMINATING session again: %v", again)
	}
	s := f.get("limited")
	if s.Session.Status != domain.SessionTerminating || s.Session.StatusReason != "time limit" {
		t.Errorf("session %s %q, want TERMINATING \"time limit\"", s.Session.Status, s.Session.StatusReason)
	}
	code := 0
	f.kernel(s.Kernels[0].ID, domain.KernelRunning, domain.KernelTerminated, func(u *store.KernelUpdate) { u.ExitCode = &code })
	f.transition([]domain.SessionID{"limited"}, []domain.SessionStatus{domain.SessionTerminating},
		domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated})
	if got := f.get("limited").Session.Outcome; got != domain.OutcomeFailure {
		t.Errorf("outcome %q after exit 0, want failure", got)
	}
}
