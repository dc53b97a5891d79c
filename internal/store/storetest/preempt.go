package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testPreemption: a plan's preemptions move victims still RUNNING, for
// preemptors still PENDING, to TERMINATING with reason "preempted by
// <id>"; once ended their outcome reads preempted. A victim that asked is
// requeued under an id of its own, which no prefix of the victim's
// matches, PENDING with the same kernels and linked to the victim by
// RequeuedFrom. The records come
// back in the group's snapshot within its window, and the victims'
// holdings name their preemptor. A victim no longer RUNNING, a preemptor
// no longer PENDING and a second application change nothing. The group's
// policy and the sessions' flags round-trip.
func testPreemption(t *testing.T, e Engine) {
	f := newFixture(t, e)
	pol := domain.Preemption{Enabled: true, MinRuntime: time.Minute, Budget: 5, Window: time.Hour}
	f.group("p", func(g *domain.ResourceGroup) { g.Preemption = pol })
	f.agent("a1", "p", []string{"cpu", "8"})
	g, err := f.s.GetResourceGroup(f.ctx, "p")
	f.must(err, "get group")
	if g.Preemption != pol {
		t.Errorf("group preemption %+v, want %+v", g.Preemption, pol)
	}
	runPreemptible(t, f, "lo", true)
	runPreemptible(t, f, "lo2", false)
	starting := f.session("starting", "p", "bob", 1, []string{"cpu", "2"}, func(s *domain.Session) { s.Preemptible = true })
	f.schedule("p", starting, "a1")
	f.session("hi", "p", "alice", 1, []string{"cpu", "6"}, func(s *domain.Session) { s.Priority = 10 })
	if got := f.get("lo").Session; !got.Preemptible || !got.Requeue {
		t.Errorf("lo preemptible %v requeue %v, want both", got.Preemptible, got.Requeue)
	}

	plan := framework.Plan{Group: "p", Preemptions: []framework.Preemption{
		preemption("lo", "hi"), preemption("lo2", "hi"), preemption("starting", "hi")}}
	res, err := f.s.ApplyPlan(f.ctx, plan, at(100))
	f.must(err, "apply preemptions")
	checkPreempted(t, f, res)
	f.invariant()

	again, err := f.s.ApplyPlan(f.ctx, plan, at(101))
	f.must(err, "apply again")
	if len(again.Preempted) != 0 {
		t.Errorf("second application preempted %+v", again.Preempted)
	}
	checkPreemptionRecords(t, f)

	// Pruning keeps what is at or after its bound.
	if n, err := f.s.PrunePreemptions(f.ctx, at(100)); err != nil || n != 0 {
		t.Errorf("prune before +100s: %d, %v; want 0 pruned", n, err)
	}
	defer func() {
		if n, err := f.s.PrunePreemptions(f.ctx, at(101)); err != nil || n != 2 {
			t.Errorf("prune before +101s: %d, %v; want 2 pruned", n, err)
		}
		if snap, err := f.s.LoadSnapshot(f.ctx, "p", at(200)); err != nil || len(snap.Preemptions) != 0 {
			t.Errorf("after pruning: %+v, %v", snap.Preemptions, err)
		}
	}()
	checkPreemptedEnds(t, f)
	f.invariant()
}

// runPreemptible makes a preemptible session of bob's RUNNING on a1.
func runPreemptible(t *testing.T, f *fixture, id string, requeue bool) {
	t.Helper()
	s := f.session(id, "p", "bob", 1, []string{"cpu", "2"}, func(s *domain.Session) {
		s.Preemptible, s.Requeue = true, requeue
	})
	f.schedule("p", s, "a1")
	f.advance(s.Session.ID, domain.SessionRunning)
}

func preemption(victim, by string) framework.Preemption {
	return framework.Preemption{Victim: domain.SessionID(victim), Preemptor: domain.SessionID(by),
		Reason: domain.PreemptedReason(domain.SessionID(by)), WorkLost: 80 * time.Second}
}

// checkPreempted: hi's plan preempted the RUNNING lo and lo2, not the
// starting session; lo, which asked, is requeued as an attempt of its own.
func checkPreempted(t *testing.T, f *fixture, res store.ApplyResult) {
	t.Helper()
	var requeued domain.SessionID
	if len(res.Preempted) > 0 {
		requeued = res.Preempted[0].Requeued
	}
	if requeued == "" || strings.HasPrefix(string(requeued), "lo") {
		t.Errorf("lo requeued as %q, want an id of its own", requeued)
	}
	want := []store.Preempted{{Victim: "lo", Preemptor: "hi", Requeued: requeued, WorkLost: 80 * time.Second},
		{Victim: "lo2", Preemptor: "hi", WorkLost: 80 * time.Second}}
	if diff := cmp.Diff(want, res.Preempted); diff != "" {
		t.Errorf("preempted (-want +got):\n%s", diff)
	}
	for _, id := range []domain.SessionID{"lo", "lo2"} {
		s := f.get(id).Session
		if s.Status != domain.SessionTerminating || s.StatusReason != "preempted by hi" || s.PreemptedBy != "hi" {
			t.Errorf("%s: %s %q by %q, want TERMINATING \"preempted by hi\" by hi", id, s.Status, s.StatusReason, s.PreemptedBy)
		}
	}
	if s := f.get("starting").Session; s.Status != domain.SessionScheduled {
		t.Errorf("starting was not RUNNING, yet it is %s", s.Status)
	}
	clone := f.get(requeued)
	if clone.Session.Status != domain.SessionPending || len(clone.Kernels) != 1 || clone.Kernels[0].Agent != "" ||
		!cmp.Equal(clone.Kernels[0].Requested, f.slots("cpu", "2")) || !clone.Session.Requeue || clone.Session.Name != "lo.r" ||
		clone.Session.RequeuedFrom != "lo" || f.get("lo").Session.RequeuedFrom != "" {
		t.Errorf("requeued attempt %+v", clone)
	}
	all, err := f.s.ListSessions(f.ctx, store.SessionFilter{})
	f.must(err, "list sessions")
	for _, s := range all {
		if s.RequeuedFrom != "" && s.ID != requeued {
			t.Errorf("%s requeued from %s: only lo asked to be requeued", s.ID, s.RequeuedFrom)
		}
	}
	// Victims hold their slots until their kernels are gone.
	if occ := f.getAgent("a1").Occupied; !cmp.Equal(occ, f.slots("cpu", "6")) {
		t.Errorf("a1 occupied %v, want 6 cpu until the victims' kernels end", occ)
	}
}

// checkPreemptionRecords: the group's snapshot has the preemptions made at
// +100s within its window, and none after it; the holdings name their
// preemptor.
func checkPreemptionRecords(t *testing.T, f *fixture) {
	t.Helper()
	snap, err := f.s.LoadSnapshot(f.ctx, "p", at(200))
	f.must(err, "snapshot")
	if len(snap.Preemptions) != 2 || snap.Preemptions[0].Preemptor != "hi" || !snap.Preemptions[0].At.Equal(at(100)) {
		t.Errorf("snapshot preemptions %+v, want lo and lo2 by hi at +100s", snap.Preemptions)
	}
	by := map[domain.SessionID]framework.Holding{}
	for _, h := range snap.Holdings {
		by[h.Session] = h
	}
	if h := by["lo"]; h.PreemptedBy != "hi" || h.Status != domain.SessionTerminating {
		t.Errorf("lo holding %+v, want TERMINATING preempted by hi", h)
	}
	if h := by["starting"]; !h.Preemptible || h.Status != domain.SessionScheduled || !h.Started.IsZero() {
		t.Errorf("starting holding %+v", h)
	}
	snap, err = f.s.LoadSnapshot(f.ctx, "p", at(100).Add(2*time.Hour))
	f.must(err, "snapshot later")
	if len(snap.Preemptions) != 0 {
		t.Errorf("preemptions outside the window: %+v", snap.Preemptions)
	}
}

// checkPreemptedEnds: lo, once ended, reads preempted; hi, once
// cancelled, preempts nobody.
func checkPreemptedEnds(t *testing.T, f *fixture) {
	t.Helper()
	_, err := f.s.TransitionSessions(f.ctx, []domain.SessionID{"lo"}, []domain.SessionStatus{domain.SessionTerminating},
		domain.Transition{Session: domain.SessionTerminated, Kernel: domain.KernelTerminated}, "", at(120))
	f.must(err, "end lo")
	if got := f.get("lo").Session.Outcome; got != domain.OutcomePreempted {
		t.Errorf("lo outcome %s, want preempted", got)
	}
	runPreemptible(t, f, "lo3", false)
	_, err = f.s.TransitionSessions(f.ctx, []domain.SessionID{"hi"}, []domain.SessionStatus{domain.SessionPending},
		domain.Transition{Session: domain.SessionCancelled}, "", at(130))
	f.must(err, "cancel hi")
	res, err := f.s.ApplyPlan(f.ctx, framework.Plan{Group: "p", Preemptions: []framework.Preemption{preemption("lo3", "hi")}}, at(140))
	f.must(err, "apply for a cancelled preemptor")
	if len(res.Preempted) != 0 || f.get("lo3").Session.Status != domain.SessionRunning {
		t.Errorf("a cancelled preemptor evicted %+v", res.Preempted)
	}
}
