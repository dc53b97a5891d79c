package coordinator_test

import (
	"fmt"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TestArrayCapThroughCycles: an array of 5 capped at 2 on an agent with
// room for 8 runs two elements at a time through the real cycle, the
// next starting as one ends, and never holds more than two; every
// element ends and the array's outcome is success.
func TestArrayCapThroughCycles(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		owner := domain.Owner{User: "alice", Project: "p", Domain: "d"}
		arr := domain.Array{ID: "arr", Name: "sweep", Owner: owner, Spec: "0-4%2", Count: 5, MaxRunning: 2,
			CreatedAt: h.clock.Now()}
		req, _ := h.reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g"})
		var ids []domain.SessionID
		var elems []store.NewSession
		for i := range 5 {
			id := domain.SessionID(fmt.Sprintf("e-%d", i))
			s := domain.Session{ID: id, Name: domain.ArrayElementName("sweep", i), Owner: owner, Type: domain.TypeBatch,
				Image: "sleep", Architecture: "x86_64", ResourceGroup: "default", ClusterMode: domain.SingleNode,
				ClusterSize: 1, Requested: req, Status: domain.SessionPending, Array: arr.ID, ArrayIndex: i,
				CreatedAt: h.clock.Now()}
			k := domain.Kernel{ID: domain.KernelIDOf(id, 0), SessionID: id, ClusterRole: domain.RoleMain, Image: "sleep",
				Architecture: "x86_64", Requested: req.Clone(), Status: domain.KernelPending}
			ids, elems = append(ids, id), append(elems, store.NewSession{Session: s, Kernels: []domain.Kernel{k}})
		}
		if err := h.st.CreateArray(h.ctx, arr, elems); err != nil {
			t.Fatal(err)
		}
		h.c.Mark()
		holding := func() (n int, running []domain.SessionID) {
			for _, id := range ids {
				st := h.status(id)
				if st.HoldsResources() {
					n++
				}
				if st == domain.SessionRunning {
					running = append(running, id)
				}
			}
			return n, running
		}
		ended := 0
		for step := 0; ended < 5; step++ {
			if step > 200 {
				t.Fatalf("the array did not end: %d elements ended", ended)
			}
			h.step()
			n, running := holding()
			if n > 2 {
				t.Fatalf("step %d: %d elements hold resources, more than the cap of 2", step, n)
			}
			// End one running element every few steps, so the next must
			// wait for it.
			if len(running) > 0 && step%3 == 0 {
				h.agents.exit(domain.KernelIDOf(running[0], 0), 0)
			}
			ended = 0
			for _, id := range ids {
				if h.status(id).Terminal() {
					ended++
				}
			}
		}
		sums, err := h.st.ArraySummaries(h.ctx, []domain.ArrayID{arr.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got := sums[arr.ID].Outcome(); got != domain.OutcomeSuccess {
			t.Errorf("array outcome %v, want success (%+v)", got, sums[arr.ID])
		}
	})
}
