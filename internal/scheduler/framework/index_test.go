package framework_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
	"github.com/sokovan-go/sokovan/internal/scheduler/selector"
)

// TestIndexFollowsReservations drives one round state through random
// reservations and give-backs and, after each, asks every ranked selector
// for every request both ways: the index's answer (kept per request size
// across changes) must be the full scan's.
func TestIndexFollowsReservations(t *testing.T) {
	t.Parallel()
	rankers := []framework.Ranker{selector.Concentrated{}, selector.Dispersed{}, selector.RoundRobin{}}
	rapid.Check(t, func(t *rapid.T) {
		reg := schedtest.Registry()
		vec := func(label string, cpu, memG, gpu int) domain.Vec {
			v := reg.NewVec()
			v[0] = domain.Quantity(rapid.IntRange(0, cpu).Draw(t, label+".cpu") * 1000)
			v[1] = domain.Quantity(rapid.IntRange(0, memG).Draw(t, label+".mem")) << 30
			v[2] = domain.Quantity(rapid.IntRange(0, gpu).Draw(t, label+".gpu") * 1000)
			return v
		}
		agents := make([]domain.Agent, rapid.IntRange(1, 30).Draw(t, "agents"))
		for i := range agents {
			capacity := vec("cap", 8, 16, 2)
			a := domain.Agent{ID: domain.AgentID(fmt.Sprintf("a%02d", i)), ResourceGroup: "default",
				Status: domain.AgentAlive, Schedulable: rapid.IntRange(0, 5).Draw(t, "cordon") > 0,
				Capacity: capacity, Occupied: reg.NewVec()}
			if i > 0 && rapid.Bool().Draw(t, "twin") {
				a.Capacity = agents[rapid.IntRange(0, i-1).Draw(t, "twinOf")].Capacity.Clone()
			}
			if rapid.IntRange(0, 3).Draw(t, "capped") == 0 {
				a.MaxKernels = rapid.IntRange(1, 4).Draw(t, "maxKernels")
			}
			agents[i] = a
		}
		sessions := make([]framework.PendingSession, rapid.IntRange(1, 6).Draw(t, "sizes"))
		for i := range sessions {
			b := schedtest.MakeSession(fmt.Sprintf("s%d", i), "")
			if rapid.Bool().Draw(t, "several") {
				b.Single(rapid.IntRange(1, 3).Draw(t, "kernels"))
			}
			p := b.Obj()
			req := vec("req", 3, 6, 1)
			for k := range p.Kernels {
				p.Kernels[k].Requested = req.Clone()
			}
			sessions[i] = p
		}
		st := framework.NewState(schedtest.MakeSnapshot(agents, sessions))
		if rapid.Bool().Draw(t, "trim") {
			st.SetMaxSeen(rapid.IntRange(1, 4).Draw(t, "maxSeen"))
		}
		if len(st.Usables()) == 0 {
			return
		}
		type held struct {
			agent int32
			req   *framework.Request
		}
		var stack []held
		ask := func(r framework.Ranker, i int) {
			req := &st.Sessions[i].Total
			want := r.Select(st, st.Usables(), req)
			if got := st.SelectIndexed(r, req); got != want {
				t.Fatalf("%s for %s: index chose %d, scan %d", r.Name(), st.Sessions[i].Pending.Session.ID, got, want)
			}
		}
		// Asking only now and then leaves answers stale across several
		// changes, as a round does between sessions of one size.
		for range rapid.IntRange(0, 80).Draw(t, "steps") {
			if rapid.Bool().Draw(t, "ask") {
				ask(rapid.SampledFrom(rankers).Draw(t, "ranker"), rapid.IntRange(0, len(st.Sessions)-1).Draw(t, "req"))
				continue
			}
			if len(stack) > 0 && rapid.IntRange(0, 3).Draw(t, "giveBack") == 0 {
				h := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				st.Unreserve(h.agent, h.req)
				continue
			}
			req := &st.Sessions[rapid.IntRange(0, len(st.Sessions)-1).Draw(t, "take")].Total
			a := st.Usables()[rapid.IntRange(0, len(st.Usables())-1).Draw(t, "on")]
			if st.Fits(a, req) {
				st.Reserve(a, req)
				stack = append(stack, held{a, req})
			}
		}
		for _, r := range rankers {
			for i := range st.Sessions {
				ask(r, i)
			}
		}
	})
}
