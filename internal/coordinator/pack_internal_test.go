package coordinator

import (
	"fmt"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestPackerBoundsCalls: a session's kernels for an agent go into one call;
// a call holds at most its kind's cap; an agent gets no more calls than it
// has free, counting those in flight; and a session that does not fit on
// every agent it needs is left out whole.
func TestPackerBoundsCalls(t *testing.T) {
	c := &Coordinator{calls: newAgentCalls()}
	c.calls.take(callCreate, "busy") // one of its two in flight
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
