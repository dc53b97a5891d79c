package coordinator

import (
	"fmt"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TestPackerBoundsCalls: a session's kernels for an agent go into one call;
// a call holds at most its kind's cap; an agent gets no more calls than it
// has free, counting those in flight; and a session that does not fit on
// every agent it needs is left out whole.
func TestPackerBoundsCalls(t *testing.T) {
	c := &Coordinator{calls: newAgentCalls()}
	c.calls.take(callCreate, "busy", nil) // one of its two in flight
	p := newPacker[int](c, callCreate)
	kernels := func(n int, agents ...domain.AgentID) map[domain.AgentID][]int {
		m := map[domain.AgentID][]int{}
		for _, a := range agents {
			for i := range n {
				m[a] = append(m[a], i)
			}
		}
		return m
	}
	for i := range 32 {
		if !p.add(domain.SessionID(fmt.Sprint("a", i)), kernels(2, "a")) {
			t.Fatalf("session %d of 2 kernels did not fit on a, with room for 64", i)
		}
	}
	if p.add("a-full", kernels(1, "a")) {
		t.Error("a 65th kernel fit on an agent with two calls of 32")
	}
	if !p.add("big", kernels(20, "busy")) || p.add("more", kernels(13, "busy")) {
		t.Error("an agent with one call in flight took other than one call of at most 32")
	}
	// Both agents needed, one full: left out whole, nothing added to b.
	if p.add("both", map[domain.AgentID][]int{"a": {1}, "b": {1}}) {
		t.Error("a session fit though one of its agents had no room")
	}
	if len(p.calls["b"]) != 0 {
		t.Errorf("a session left out still added calls to b: %+v", p.calls["b"])
	}
	var sizes []int
	for _, cl := range p.each() {
		sizes = append(sizes, len(cl.items))
	}
	if fmt.Sprint(sizes) != "[32 32 20]" {
		t.Errorf("call sizes %v, want [32 32 20]", sizes)
	}
}

// TestPlanLeavesOutSessionsInACall: a session a call under way carries
// (one past CallWait, its result not yet recorded) is not packed again,
// even when its agent has a call free: a second create or destroy of the
// same kernels could only repeat the first.
func TestPlanLeavesOutSessionsInACall(t *testing.T) {
	c := &Coordinator{calls: newAgentCalls()}
	c.calls.take(callCreate, "a1", []domain.SessionID{"s1"})
	targets := []store.SessionWithKernels{{Session: domain.Session{ID: "s1"}}, {Session: domain.Session{ID: "s2"}}}
	work := func(store.SessionWithKernels) (map[domain.AgentID][]int, bool) {
		return map[domain.AgentID][]int{"a1": {1}}, true
	}
	var packed []domain.SessionID
	for _, cl := range plan(c, callCreate, targets, work).pack.each() {
		packed = append(packed, cl.sessions...)
	}
	if fmt.Sprint(packed) != "[s2]" {
		t.Fatalf("packed %v while s1's create is under way, want [s2]", packed)
	}
	c.calls.release(callCreate, "a1", []domain.SessionID{"s1"})
	packed = nil
	for _, cl := range plan(c, callCreate, targets, work).pack.each() {
		packed = append(packed, cl.sessions...)
	}
	if fmt.Sprint(packed) != "[s1 s2]" {
		t.Fatalf("packed %v once s1's call is recorded, want [s1 s2]", packed)
	}
}
