package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

func testAgentDrains(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("default")
	f.agent("a1", "default", []string{"cpu=4"})
	f.agent("a2", "default", []string{"cpu=4"})

	f.must(f.s.DrainAgent(f.ctx, "a1", at(10), at(3610)), "drain a1")
	f.must(f.s.DrainAgent(f.ctx, "a2", at(20), at(50)), "drain a2")
	if a := f.getAgent("a1"); a.Schedulable {
		t.Fatal("a drained agent is still schedulable")
	}
	// Draining again keeps the start and replaces the deadline; a zero
	// deadline is none.
	f.must(f.s.DrainAgent(f.ctx, "a2", at(99), time.Time{}), "lift a2's deadline")
	got, err := f.s.ListAgentDrains(f.ctx)
	f.must(err, "list drains")
	want := []domain.AgentDrain{{Agent: "a1", Started: at(10), Deadline: at(3610)}, {Agent: "a2", Started: at(20)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("drains (-want +got):\n%s", diff)
	}
	// Uncordoning ends the drain; cordoning does not.
	f.must(f.s.SetAgentSchedulable(f.ctx, "a1", false), "cordon a1")
	f.must(f.s.SetAgentSchedulable(f.ctx, "a2", true), "uncordon a2")
	got, err = f.s.ListAgentDrains(f.ctx)
	f.must(err, "list drains")
	if len(got) != 1 || got[0].Agent != "a1" {
		t.Fatalf("after uncordoning a2: %+v; want only a1's drain", got)
	}
	if err := f.s.DrainAgent(f.ctx, "ghost", at(0), at(1)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("draining a missing agent: %v; want ErrNotFound", err)
	}
}
