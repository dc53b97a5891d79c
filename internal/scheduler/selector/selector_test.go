package selector_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
	"github.com/sokovan-go/sokovan/internal/scheduler/selector"
)

// pick builds a round state over agents and asks sel for one cpu=1 kernel
// among all of them.
func pick(t *testing.T, sel framework.Selector, cursor string, req string, agents ...*AgentB) string {
	t.Helper()
	snap := MakeSnapshot(Agents(agents...), Sessions(MakeSession("s", req)))
	snap.Cursor = domain.AgentID(cursor)
	st := framework.NewState(snap)
	all := make([]int32, len(st.Agents))
	for i := range all {
		all[i] = int32(i)
	}
	a := sel.Select(st, all, &st.Sessions[0].Total)
	if a < 0 {
		return ""
	}
	return string(st.Agents[a].ID)
}

func TestConcentrated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		agents []*AgentB
		want   string
	}{
		// util = mean over slots with capacity of occupied ÷ capacity.
		{"most utilised first", []*AgentB{
			MakeAgent("a", "cpu=8,mem=8g").Occupied("cpu=2"), // (2/8 + 0/8)/2 = 0.125
			MakeAgent("b", "cpu=8,mem=8g").Occupied("cpu=4"), // (4/8 + 0)/2 = 0.25
		}, "b"},
		{"equal utilisation: smaller capacity", []*AgentB{
			MakeAgent("a", "cpu=16,mem=16g"), // size 16/16 + 16/16 = 2
			MakeAgent("b", "cpu=8,mem=8g"),   // size 8/16 + 8/16 = 1
		}, "b"},
		{"all equal: lower id", []*AgentB{MakeAgent("b", "cpu=8"), MakeAgent("a", "cpu=8")}, "a"},
		{"busiest agent skipped when it does not fit", []*AgentB{
			MakeAgent("a", "cpu=8,mem=8g").Occupied("cpu=8"), // util 0.5 but 0 cpu free
			MakeAgent("b", "cpu=8,mem=8g"),
		}, "b"},
		{"nothing fits", []*AgentB{MakeAgent("a", "cpu=8").Occupied("cpu=8")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := pick(t, selector.Concentrated{}, "", "cpu=1", tc.agents...); got != tc.want {
				t.Fatalf("picked %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDispersed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		agents []*AgentB
		want   string
	}{
		{"least utilised first", []*AgentB{
			MakeAgent("a", "cpu=8,mem=8g").Occupied("cpu=2"), // 0.125
			MakeAgent("b", "cpu=8,mem=8g").Occupied("cpu=4"), // 0.25
		}, "a"},
		{"equal utilisation: larger capacity", []*AgentB{
			MakeAgent("a", "cpu=8,mem=8g"),   // size 1
			MakeAgent("b", "cpu=16,mem=16g"), // size 2
		}, "b"},
		{"all equal: lower id", []*AgentB{MakeAgent("b", "cpu=8"), MakeAgent("a", "cpu=8")}, "a"},
		{"memory counts in utilisation", []*AgentB{
			MakeAgent("a", "cpu=8,mem=8g").Occupied("mem=6g"), // (0 + 6/8)/2 = 0.375
			MakeAgent("b", "cpu=8,mem=8g").Occupied("cpu=4"),  // (4/8 + 0)/2 = 0.25
		}, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := pick(t, selector.Dispersed{}, "", "cpu=1", tc.agents...); got != tc.want {
				t.Fatalf("picked %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRoundRobin(t *testing.T) {
	t.Parallel()
	agents := func() []*AgentB {
		return []*AgentB{MakeAgent("c", "cpu=8"), MakeAgent("a", "cpu=8"), MakeAgent("b", "cpu=8").Occupied("cpu=8")}
	}
	tests := []struct {
		name   string
		cursor string
		want   string
	}{
		{"no cursor starts at the lowest id", "", "a"},
		{"after a comes b, but b is full, so c", "a", "c"},
		{"after the last id wraps around", "c", "a"},
		{"a cursor naming a removed agent still orders by id", "bb", "c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := pick(t, selector.RoundRobin{}, tc.cursor, "cpu=1", agents()...); got != tc.want {
				t.Fatalf("picked %q, want %q", got, tc.want)
			}
		})
	}
}
