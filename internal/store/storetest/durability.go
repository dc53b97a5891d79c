package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testRegistryGrowth writes with one slot registry and reads with a larger,
// reordered one: stored vectors are keyed by name, so nothing shifts. A
// registry that lost a slot still in use gets a corrupt-row error, not a
// silent zero.
func testRegistryGrowth(t *testing.T, e Engine) {
	f := newFixture(t, e)
	small, err := domain.NewRegistry(domain.SlotType{Name: "cpu", Kind: domain.KindCount}, domain.SlotType{Name: "mem", Kind: domain.KindBytes})
	f.must(err, "small registry")
	f.reg = small
	f.s = f.open(Options{Registry: small})
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "4", "mem", "8g"})
	s := f.session("s1", "g", "alice", 1, []string{"cpu", "1.5", "mem", "1g"})
	f.schedule("g", s, "a1")

	big, err := domain.NewRegistry(
		domain.SlotType{Name: "tpu", Kind: domain.KindCount},
		domain.SlotType{Name: "mem", Kind: domain.KindBytes},
		domain.SlotType{Name: "cpu", Kind: domain.KindCount},
	)
	f.must(err, "big registry")
	f.reg = big
	f.s = f.open(Options{Registry: big})
	a := f.getAgent("a1")
	if diff := cmp.Diff(f.slots("cpu", "4", "mem", "8g"), a.Capacity); diff != "" {
		t.Errorf("capacity under the grown registry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(f.slots("cpu", "1.5", "mem", "1g"), a.Occupied); diff != "" {
		t.Errorf("occupied under the grown registry (-want +got):\n%s", diff)
	}
	tpu := f.session("s2", "g", "alice", 1, []string{"cpu", "1", "tpu", "1"})
	res := f.apply("g", placement(tpu, "a1"))
	if len(res.Rejected) != 1 || res.Rejected[0].Slot != "tpu" {
		t.Errorf("a request for a slot the agent lacks: %+v", res)
	}
	f.invariant()

	cpuOnly, err := domain.NewRegistry(domain.SlotType{Name: "cpu", Kind: domain.KindCount})
	f.must(err, "shrunk registry")
	shrunk := f.open(Options{Registry: cpuOnly})
	_, err = shrunk.GetAgent(f.ctx, "a1")
	wantCorrupt(t, err, "a1")
}

// testReopen commits through one instance that is then abandoned without
// closing, as a crashed process would, and reads everything back through a
// new one.
func testReopen(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "4"})
	s := f.session("s1", "g", "alice", 2, []string{"cpu", "1"})
	f.schedule("g", s, "a1")
	f.must(f.s.AppendHistory(f.ctx, []domain.HistoryEntry{{Subject: "s1", At: at(3), Cause: domain.HandlerScheduleNewSessions,
		Result: domain.ResultSuccess, From: domain.SessionPending, To: domain.SessionScheduled}}), "history")
	before := f.state("g")
	f.s = f.open(Options{Registry: f.reg})
	if diff := cmp.Diff(before, f.state("g")); diff != "" {
		t.Errorf("after reopening (-before +after):\n%s", diff)
	}
	h, err := f.s.History(f.ctx, "s1")
	if err != nil || len(h) != 1 {
		t.Errorf("history after reopening: %v, %v", h, err)
	}
	f.invariant()
}

func wantCorrupt(t *testing.T, err error, id string) {
	t.Helper()
	var ce *store.CorruptRowError
	if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("got %v, want a corrupt-row error for %q", err, id)
	}
	if ce.ID != id || !strings.Contains(err.Error(), id) {
		t.Errorf("corrupt-row error %q names %q, want %q", err, ce.ID, id)
	}
}

// testCorruptRows damages stored values with raw SQL, as a bad hand edit
// or migration would, and checks every read path reports the row instead
// of panicking or guessing.
func testCorruptRows(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.group("h")
	f.agent("a-bad", "g", []string{"cpu", "4"})
	f.agent("a-ok", "h", []string{"cpu", "4"})
	ok := f.session("s-ok", "h", "alice", 1, []string{"cpu", "1"})
	f.session("s-bad", "h", "alice", 1, []string{"cpu", "1"})
	kb := f.session("s-kbad", "h", "alice", 1, []string{"cpu", "1"})
	f.must(f.s.PutPolicy(f.ctx, domain.Policy{Scope: domain.ScopeUser, Name: "alice", MaxSlots: domain.Unlimited(f.reg.Len())}), "policy")

	f.e.Exec(t, f.db, `UPDATE agents SET occupied = '{"cpu":"lots"}' WHERE id = 'a-bad'`)
	_, err := f.s.GetAgent(f.ctx, "a-bad")
	wantCorrupt(t, err, "a-bad")
	_, err = f.s.ListAgents(f.ctx, store.AgentFilter{})
	wantCorrupt(t, err, "a-bad")
	_, err = f.s.LoadSnapshot(f.ctx, "g", at(5))
	wantCorrupt(t, err, "a-bad")
	okPlacement := placement(ok, "a-bad")
	_, err = f.s.ApplyPlan(f.ctx, framework.Plan{Group: "h", Placements: []framework.Placement{okPlacement}}, at(5))
	wantCorrupt(t, err, "a-bad")
	if st := f.get("s-ok").Session.Status; st != domain.SessionPending {
		t.Errorf("s-ok is %s after a plan that failed on a corrupt agent", st)
	}
	if a := f.getAgent("a-ok"); !a.Occupied.IsZero() {
		t.Errorf("a-ok occupied %v", a.Occupied)
	}

	f.e.Exec(t, f.db, `UPDATE sessions SET requested = '{"warp-drive":"1"}' WHERE id = 's-bad'`)
	_, err = f.s.GetSession(f.ctx, "s-bad")
	wantCorrupt(t, err, "s-bad")
	_, err = f.s.LoadSnapshot(f.ctx, "h", at(5))
	wantCorrupt(t, err, "s-bad")
	_, err = f.s.ListSessions(f.ctx, store.SessionFilter{Group: "h"})
	wantCorrupt(t, err, "s-bad")

	f.e.Exec(t, f.db, `UPDATE kernels SET requested = '[1, 2]' WHERE id = '`+string(kb.Kernels[0].ID)+`'`)
	_, err = f.s.GetSession(f.ctx, "s-kbad")
	wantCorrupt(t, err, string(kb.Kernels[0].ID))
	_, err = f.s.ApplyPlan(f.ctx, framework.Plan{Group: "h", Placements: []framework.Placement{placement(kb, "a-ok")}}, at(5))
	wantCorrupt(t, err, string(kb.Kernels[0].ID))

	f.e.Exec(t, f.db, `UPDATE resource_groups SET allowed_types = '{"batch": true}' WHERE name = 'h'`)
	_, err = f.s.GetResourceGroup(f.ctx, "h")
	wantCorrupt(t, err, "h")

	f.e.Exec(t, f.db, `UPDATE policies SET max_slots = '{"cpu":"1.5"}' WHERE name = 'alice'`)
	_, err = f.s.GetPolicy(f.ctx, domain.ScopeUser, "alice")
	wantCorrupt(t, err, "user:alice")

	// Rows that were not damaged still read.
	if _, err := f.s.GetAgent(f.ctx, "a-ok"); err != nil {
		t.Errorf("a-ok: %v", err)
	}
	if got := f.get("s-ok"); !slices.Equal(got.Session.Requested, f.slots("cpu", "1")) {
		t.Errorf("s-ok requested %v", got.Session.Requested)
	}
}
