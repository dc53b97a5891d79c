package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// kernel applies one agent event and fails the test if it does not apply.
func (f *fixture) kernel(id domain.KernelID, from, to domain.KernelStatus, mods ...func(*store.KernelUpdate)) domain.Kernel {
	f.t.Helper()
	u := store.KernelUpdate{Kernel: id, From: []domain.KernelStatus{from}, To: to, Now: at(40)}
	for _, m := range mods {
		m(&u)
	}
	k, err := f.s.UpdateKernel(f.ctx, u)
	f.must(err, "kernel %s %s → %s", id, from, to)
	return k
}

func (f *fixture) transition(ids []domain.SessionID, from []domain.SessionStatus, to domain.Transition) []domain.SessionID {
	f.t.Helper()
	got, err := f.s.TransitionSessions(f.ctx, ids, from, to, "because", at(50))
	f.must(err, "transition %v to %+v", ids, to)
	return got
}

func statuses(s store.SessionWithKernels) (domain.SessionStatus, []domain.KernelStatus) {
	var ks []domain.KernelStatus
	for _, k := range s.Kernels {
		ks = append(ks, k.Status)
	}
	return s.Session.Status, ks
}

func testTransitionSessions(t *testing.T, e Engine) {
	f := newFixture(t, e)
	pending := []domain.SessionStatus{domain.SessionPending}
	for _, tc := range []struct {
		name string
		// at is the status the session (two kernels, cpu 1 each, both on
		// the agent once placed) is brought to first.
		at       domain.SessionStatus
		from     []domain.SessionStatus
		to       domain.Transition
		want     domain.SessionStatus
		kernels  domain.KernelStatus
		occupied string // cpu left occupied on the agent
		moved    bool
	}{
		{"pending cancelled", domain.SessionPending, pending,
			domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled},
			domain.SessionCancelled, domain.KernelCancelled, "0", true},
		{"stale from-status", domain.SessionScheduled, pending,
			domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled},
			domain.SessionScheduled, domain.KernelScheduled, "2", false},
		{"re-scheduling releases", domain.SessionPreparing, []domain.SessionStatus{domain.SessionScheduled, domain.SessionPreparing},
			domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending},
			domain.SessionPending, domain.KernelPending, "0", true},
		{"re-scheduling from creating", domain.SessionCreating, []domain.SessionStatus{domain.SessionCreating},
			domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending},
			domain.SessionPending, domain.KernelPending, "0", true},
		{"terminating still holds", domain.SessionRunning, []domain.SessionStatus{domain.SessionRunning},
			domain.Transition{Session: domain.SessionTerminating, Kernel: domain.KernelTerminating},
			domain.SessionTerminating, domain.KernelTerminating, "2", true},
		{"terminated releases", domain.SessionTerminating, []domain.SessionStatus{domain.SessionTerminating},
			domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated},
			domain.SessionTerminated, domain.KernelTerminated, "0", true},
		{"scheduled cancelled", domain.SessionScheduled, []domain.SessionStatus{domain.SessionScheduled},
			domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled},
			domain.SessionCancelled, domain.KernelCancelled, "0", true},
		{"promotion moves the session only", domain.SessionCreating, []domain.SessionStatus{domain.SessionCreating},
			domain.Transition{Session: domain.SessionRunning},
			domain.SessionRunning, domain.KernelCreating, "2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := "g-" + tc.name
			f.group(g)
			agent := domain.AgentID(g + "-a")
			f.agent(string(agent), g, []string{"cpu", "8"})
			s := f.session(g+"-s", g, "alice", 2, []string{"cpu", "1"})
			id := s.Session.ID
			if tc.at != domain.SessionPending {
				f.schedule(g, s, agent)
				f.advance(id, tc.at)
			}
			got := f.transition([]domain.SessionID{id, "ghost"}, tc.from, tc.to)
			if moved := slices.Equal(got, []domain.SessionID{id}); moved != tc.moved {
				t.Errorf("changed %v, want moved=%t", got, tc.moved)
			}
			after := f.get(id)
			st, ks := statuses(after)
			if diff := cmp.Diff([]domain.KernelStatus{tc.kernels, tc.kernels}, ks); st != tc.want || diff != "" {
				t.Errorf("session %s (want %s), kernels (-want +got):\n%s", st, tc.want, diff)
			}
			if tc.moved && tc.to.Session != 0 && (after.Session.StatusReason != "because" || !after.Session.StatusChangedAt.Equal(at(50))) {
				t.Errorf("moved session has reason %q since %v", after.Session.StatusReason, after.Session.StatusChangedAt)
			}
			for _, k := range after.Kernels {
				if k.Status == domain.KernelPending && k.Agent != "" {
					t.Errorf("kernel %s back in PENDING still on agent %s", k.ID, k.Agent)
				}
			}
			if occ := f.getAgent(agent).Occupied; !slices.Equal(occ, f.slots("cpu", tc.occupied)) {
				t.Errorf("agent occupied %v, want cpu %s", occ, tc.occupied)
			}
			f.invariant()
		})
	}
	t.Run("an end keeps why it ended", func(t *testing.T) {
		// TERMINATING's reason (a cancel, a time limit) is what an ended
		// session is shown with; the promotion that gives none keeps it,
		// a move that gives one replaces it.
		f.group("g-why")
		f.agent("g-why-a", "g-why", []string{"cpu", "8"})
		terminating := []domain.SessionStatus{domain.SessionTerminating}
		for i, tc := range []struct{ reason, want string }{{"", "time limit 1s"}, {"force-terminated", "force-terminated"}} {
			s := f.session(fmt.Sprintf("why-%d", i), "g-why", "alice", 1, []string{"cpu", "1"})
			id := s.Session.ID
			f.schedule("g-why", s, "g-why-a")
			f.advance(id, domain.SessionRunning)
			_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{id}, []domain.SessionStatus{domain.SessionRunning},
				domain.Transition{Session: domain.SessionTerminating}, "time limit 1s", at(30))
			f.must(err, "end %s", id)
			_, err = f.s.TransitionSessions(f.ctx, []domain.SessionID{id}, terminating,
				domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}, tc.reason, at(31))
			f.must(err, "promote %s", id)
			if got := f.get(id).Session; got.Status != domain.SessionTerminated || got.StatusReason != tc.want {
				t.Errorf("moved with reason %q: %s with reason %q, want TERMINATED with %q", tc.reason, got.Status, got.StatusReason, tc.want)
			}
		}
	})
	t.Run("only plans reserve", func(t *testing.T) {
		f.group("g-reserve")
		s := f.session("reserve", "g-reserve", "alice", 1, []string{"cpu", "1"})
		_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{s.Session.ID}, pending,
			domain.Transition{Session: domain.SessionScheduled, Kernel: domain.KernelScheduled}, "", at(3))
		wantErr(t, err, store.ErrInvalid, "scheduling outside a plan")
		if st, _ := statuses(f.get("reserve")); st != domain.SessionPending {
			t.Errorf("session is %s after a refused transition", st)
		}
	})
}

// testReleaseOnce drives the same release down every path that could
// repeat it, including concurrently from two store instances.
func testReleaseOnce(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8"})
	s := f.session("s1", "g", "alice", 2, []string{"cpu", "2"})
	f.schedule("g", s, "a1")
	f.advance("s1", domain.SessionRunning)

	// One kernel exits on its own: its slots come back now.
	f.kernel(s.Kernels[0].ID, domain.KernelRunning, domain.KernelTerminated, func(u *store.KernelUpdate) { u.ExitCode = new(int) })
	if occ := f.getAgent("a1").Occupied; !slices.Equal(occ, f.slots("cpu", "2")) {
		t.Fatalf("after one kernel ended, occupied %v, want cpu 2", occ)
	}
	// The same event again is refused by its guard and releases nothing.
	_, err := f.s.UpdateKernel(f.ctx, store.KernelUpdate{Kernel: s.Kernels[0].ID,
		From: []domain.KernelStatus{domain.KernelRunning}, To: domain.KernelTerminated, Now: at(41)})
	wantErr(t, err, store.ErrGuardFailed, "repeated kernel event")
	// Terminating the session moves only the kernel still running.
	f.transition([]domain.SessionID{"s1"}, []domain.SessionStatus{domain.SessionRunning},
		domain.Transition{Session: domain.SessionTerminating, Kernel: domain.KernelTerminating})
	if _, ks := statuses(f.get("s1")); !slices.Equal(ks, []domain.KernelStatus{domain.KernelTerminated, domain.KernelTerminating}) {
		t.Errorf("kernels %v after terminating", ks)
	}

	// Many concurrent attempts to end it: exactly one wins.
	other := f.open(Options{Registry: f.reg})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		st := f.s
		if i%2 == 1 {
			st = other
		}
		wg.Go(func() {
			got, err := st.TransitionSessions(f.ctx, []domain.SessionID{"s1"}, []domain.SessionStatus{domain.SessionTerminating},
				domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}, "", at(60))
			if err != nil {
				t.Errorf("concurrent terminate: %v", err)
				return
			}
			mu.Lock()
			wins += len(got)
			mu.Unlock()
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d transitions won, want exactly 1", wins)
	}
	f.wantHeld("a1", f.slots(), 0)
	f.invariant()
}

func testKernelsAheadStay(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8"})
	s := f.session("s1", "g", "alice", 3, []string{"cpu", "1"})
	f.schedule("g", s, "a1")
	// Agent events got ahead of the coordinator for two kernels.
	f.kernel(s.Kernels[1].ID, domain.KernelScheduled, domain.KernelPulling)
	f.kernel(s.Kernels[2].ID, domain.KernelScheduled, domain.KernelPrepared)
	f.transition([]domain.SessionID{"s1"}, []domain.SessionStatus{domain.SessionScheduled},
		domain.Transition{Session: domain.SessionPreparing, Kernel: domain.KernelPreparing})
	_, ks := statuses(f.get("s1"))
	want := []domain.KernelStatus{domain.KernelPreparing, domain.KernelPulling, domain.KernelPrepared}
	if diff := cmp.Diff(want, ks); diff != "" {
		t.Errorf("kernels (-want +got):\n%s", diff)
	}
	f.invariant()
}

func testOutcome(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "64"})
	code := func(c int) func(*store.KernelUpdate) { return func(u *store.KernelUpdate) { u.ExitCode = &c } }
	for _, tc := range []struct {
		name string
		// run ends the session's two kernels, starting from a RUNNING
		// session, and returns the session status to end it in.
		run  func(s store.SessionWithKernels) domain.SessionStatus
		want domain.Outcome
	}{
		{"every kernel exited 0", func(s store.SessionWithKernels) domain.SessionStatus {
			f.kernel(s.Kernels[0].ID, domain.KernelRunning, domain.KernelTerminated, code(0))
			f.kernel(s.Kernels[1].ID, domain.KernelRunning, domain.KernelTerminated, code(0))
			return domain.SessionTerminated
		}, domain.OutcomeSuccess},
		{"a kernel exited non-zero", func(s store.SessionWithKernels) domain.SessionStatus {
			f.kernel(s.Kernels[0].ID, domain.KernelRunning, domain.KernelTerminated, code(0))
			f.kernel(s.Kernels[1].ID, domain.KernelRunning, domain.KernelTerminated, code(2))
			return domain.SessionTerminated
		}, domain.OutcomeFailure},
		{"force-terminated", func(s store.SessionWithKernels) domain.SessionStatus {
			f.kernel(s.Kernels[0].ID, domain.KernelRunning, domain.KernelTerminated, code(0))
			return domain.SessionTerminated // the other kernel is ended by the transition, with no exit code
		}, domain.OutcomeFailure},
		{"a kernel errored", func(s store.SessionWithKernels) domain.SessionStatus {
			f.kernel(s.Kernels[0].ID, domain.KernelRunning, domain.KernelError)
			return domain.SessionError
		}, domain.OutcomeFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := domain.SessionID("s-" + tc.name)
			s := f.session(string(id), "g", "alice", 2, []string{"cpu", "1"})
			f.schedule("g", s, "a1")
			f.advance(id, domain.SessionRunning)
			end := tc.run(s)
			kernelEnd := domain.KernelTerminated
			if end == domain.SessionError {
				kernelEnd = domain.KernelError
			}
			f.transition([]domain.SessionID{id}, []domain.SessionStatus{domain.SessionRunning},
				domain.Transition{Session: end, Kernel: kernelEnd})
			if got := f.get(id).Session.Outcome; got != tc.want {
				t.Errorf("outcome %q, want %q", got, tc.want)
			}
			f.invariant()
		})
	}
	t.Run("never ran", func(t *testing.T) {
		s := f.session("never", "g", "alice", 1, []string{"cpu", "1"})
		f.transition([]domain.SessionID{s.Session.ID}, []domain.SessionStatus{domain.SessionPending},
			domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled})
		if got := f.get("never").Session.Outcome; got != domain.OutcomeCancelled {
			t.Errorf("outcome %q, want cancelled", got)
		}
	})
}

func testUpdateKernel(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8"})
	s := f.session("s1", "g", "alice", 1, []string{"cpu", "2"})
	id := s.Kernels[0].ID
	_, err := f.s.UpdateKernel(f.ctx, store.KernelUpdate{Kernel: id, From: []domain.KernelStatus{domain.KernelPending},
		To: domain.KernelScheduled, Now: at(3)})
	wantErr(t, err, store.ErrInvalid, "an event cannot reserve")
	_, err = f.s.UpdateKernel(f.ctx, store.KernelUpdate{Kernel: "ghost", From: []domain.KernelStatus{domain.KernelPending},
		To: domain.KernelError, Now: at(3)})
	wantErr(t, err, store.ErrNotFound, "unknown kernel")

	f.schedule("g", s, "a1")
	k := f.kernel(id, domain.KernelScheduled, domain.KernelPulling, func(u *store.KernelUpdate) {
		u.ContainerID, u.Reason = "c-1", "pulling sleep"
	})
	if k.Status != domain.KernelPulling || k.ContainerID != "c-1" || k.StatusReason != "pulling sleep" || !k.StatusChangedAt.Equal(at(40)) {
		t.Errorf("after pulling: %+v", k)
	}
	_, err = f.s.UpdateKernel(f.ctx, store.KernelUpdate{Kernel: id,
		From: []domain.KernelStatus{domain.KernelCreating, domain.KernelRunning}, To: domain.KernelTerminated, Now: at(41)})
	wantErr(t, err, store.ErrGuardFailed, "stale from-status")
	if got := f.get(s.Session.ID).Kernels[0]; got.Status != domain.KernelPulling {
		t.Errorf("a refused event changed the kernel to %s", got.Status)
	}

	// Any of several expected statuses will do; an empty container id
	// keeps the one known.
	k = f.kernel(id, domain.KernelPulling, domain.KernelError, func(u *store.KernelUpdate) {
		u.From = []domain.KernelStatus{domain.KernelPreparing, domain.KernelPulling}
		u.ExitCode = new(int)
		*u.ExitCode = 137
	})
	if k.ContainerID != "c-1" || k.ExitCode == nil || *k.ExitCode != 137 || k.Agent != "a1" {
		t.Errorf("after error: %+v", k)
	}
	f.wantHeld("a1", f.slots(), 0) // the kernel ended
	// The session is ended by the coordinator; then the books balance.
	f.transition([]domain.SessionID{"s1"}, []domain.SessionStatus{domain.SessionScheduled},
		domain.Transition{Session: domain.SessionError, Kernel: domain.KernelError})
	f.invariant()
}

// testMoveSessions checks that a move returns where each session came
// from and writes its history in the same call, and only for the
// sessions the guard let through.
func testMoveSessions(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("g-a", "g", []string{"cpu", "8"})
	run := f.session("run", "g", "alice", 1, []string{"cpu", "1"})
	f.schedule("g", run, "g-a")
	f.advance("run", domain.SessionRunning)
	f.session("wait", "g", "alice", 1, []string{"cpu", "1"})
	before := map[domain.SessionID][]domain.HistoryEntry{}
	for _, id := range []domain.SessionID{"run", "wait"} {
		h, err := f.s.History(f.ctx, id)
		f.must(err, "history of %s", id)
		before[id] = h
	}
	note := &store.MoveNote{Handler: domain.HandlerDetectTermination, Result: domain.ResultSuccess, Message: "exit 0"}
	got, err := f.s.MoveSessions(f.ctx, store.Move{IDs: []domain.SessionID{"wait", "run", "ghost"},
		From: []domain.SessionStatus{domain.SessionRunning}, To: domain.Transition{Session: domain.SessionTerminating},
		Reason: "exit 0", Now: at(60), Note: note})
	f.must(err, "move")
	want := []store.Moved{{ID: "run", From: domain.SessionRunning, CreatedAt: f.get("run").Session.CreatedAt}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("moved (-want +got):\n%s", diff)
	}
	if st, _ := statuses(f.get("run")); st != domain.SessionTerminating {
		t.Errorf("run is %s, want TERMINATING", st)
	}
	h, err := f.s.History(f.ctx, "run")
	f.must(err, "history of run")
	wantEntry := domain.HistoryEntry{Subject: "run", At: at(60), Cause: domain.HandlerDetectTermination,
		Result: domain.ResultSuccess, From: domain.SessionRunning, To: domain.SessionTerminating, Message: "exit 0", Attempt: 1}
	if diff := cmp.Diff(append(before["run"], wantEntry), h); diff != "" {
		t.Errorf("history of run (-want +got):\n%s", diff)
	}
	h, err = f.s.History(f.ctx, "wait")
	f.must(err, "history of wait")
	if diff := cmp.Diff(before["wait"], h); diff != "" {
		t.Errorf("the guard refused wait, yet its history changed (-want +got):\n%s", diff)
	}
	// A move no session passes writes nothing and says so.
	got, err = f.s.MoveSessions(f.ctx, store.Move{IDs: []domain.SessionID{"wait"},
		From: []domain.SessionStatus{domain.SessionRunning}, To: domain.Transition{Session: domain.SessionTerminating}, Now: at(61), Note: note})
	f.must(err, "empty move")
	if len(got) != 0 {
		t.Errorf("moved %v, want none", got)
	}
	f.invariant()
}
