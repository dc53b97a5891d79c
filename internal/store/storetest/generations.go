package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// testGroupGenerations checks which writes move a group's generation: those
// that change its scheduling input outside the change feed, and no others.
func testGroupGenerations(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.group("g2")
	gens := func() map[string]int64 {
		t.Helper()
		g, err := f.s.GroupGenerations(f.ctx)
		f.must(err, "generations")
		return g
	}
	last := gens()
	step := func(name string, want map[string]int64, do func()) {
		t.Helper()
		do()
		got := gens()
		moved := map[string]int64{}
		for g, n := range got {
			moved[g] = n - last[g]
		}
		if diff := cmp.Diff(want, moved); diff != "" {
			t.Errorf("%s: generation moves (-want +got):\n%s", name, diff)
		}
		last = got
	}
	step("register", map[string]int64{"g1": 1, "g2": 0}, func() { f.agent("a1", "g1", []string{"cpu", "4"}) })
	step("heartbeat", map[string]int64{"g1": 0, "g2": 0}, func() { f.must(f.s.Heartbeat(f.ctx, "a1", 1, at(2)), "heartbeat") })
	step("capacity grows", map[string]int64{"g1": 1, "g2": 0}, func() {
		_, err := f.s.SetAgentCapacity(f.ctx, "a1", 1, f.slots("cpu", "8"))
		f.must(err, "capacity")
	})
	step("capacity unchanged", map[string]int64{"g1": 0, "g2": 0}, func() {
		_, err := f.s.SetAgentCapacity(f.ctx, "a1", 1, f.slots("cpu", "8"))
		f.must(err, "same capacity")
	})
	step("cordon", map[string]int64{"g1": 1, "g2": 0}, func() { f.must(f.s.SetAgentSchedulable(f.ctx, "a1", false), "cordon") })
	step("lose", map[string]int64{"g1": 1, "g2": 0}, func() { f.must(f.s.SetAgentStatus(f.ctx, "a1", domain.AgentLost), "lose") })
	step("move to g2", map[string]int64{"g1": 1, "g2": 1}, func() { f.agent("a1", "g2", []string{"cpu", "4"}) })
	step("put group", map[string]int64{"g1": 1, "g2": 0}, func() { f.group("g1") })
	step("uncordon", map[string]int64{"g1": 0, "g2": 1}, func() { f.must(f.s.SetAgentSchedulable(f.ctx, "a1", true), "uncordon") })
	step("session and placement", map[string]int64{"g1": 0, "g2": 0}, func() {
		f.schedule("g2", f.session("s1", "g2", "alice", 1, []string{"cpu", "1"}), "a1")
	})
	step("policy", map[string]int64{"g1": 1, "g2": 1}, func() {
		f.must(f.s.PutPolicy(f.ctx, domain.Policy{Scope: domain.ScopeUser, Name: "alice", MaxConcurrentSessions: 1}), "policy")
	})
}
