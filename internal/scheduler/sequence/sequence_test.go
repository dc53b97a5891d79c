package sequence_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
	"github.com/sokovan-go/sokovan/internal/scheduler/sequence"
)

// drain runs a queue over every session, calling Placed for those in
// place (as the round would after reserving them in st).
func drain(st *framework.State, q framework.Queue, place map[string]bool) []string {
	var out []string
	for i, ok := q.Next(); ok; i, ok = q.Next() {
		s := &st.Sessions[i]
		id := string(s.Pending.Session.ID)
		out = append(out, id)
		if place[id] {
			st.Commit(s)
			q.Placed(i)
		}
	}
	return out
}

func all(st *framework.State) []int32 {
	band := make([]int32, len(st.Sessions))
	for i := range band {
		band[i] = int32(i)
	}
	return band
}

func TestFIFOAndLIFO(t *testing.T) {
	t.Parallel()
	sessions := Sessions(
		MakeSession("b", "cpu=1").Created(5),
		MakeSession("a", "cpu=1").Created(5),
		MakeSession("c", "cpu=1").Created(1),
		MakeSession("d", "cpu=1").Created(9),
	)
	st := framework.NewState(MakeSnapshot(nil, sessions))
	// created: c=1, a=b=5 (a before b by id), d=9
	if diff := cmp.Diff([]string{"c", "a", "b", "d"}, drain(st, sequence.FIFO{}.Queue(st, all(st)), nil)); diff != "" {
		t.Errorf("fifo (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"d", "a", "b", "c"}, drain(st, sequence.LIFO{}.Queue(st, all(st)), nil)); diff != "" {
		t.Errorf("lifo (-want +got):\n%s", diff)
	}
}

func TestDRF(t *testing.T) {
	t.Parallel()
	// Group capacity: cpu 10, mem 100g.
	// Held before the round: alice cpu 1 (0.1), mem 40g (0.4) → dominant 0.4;
	//                        bob   cpu 3 (0.3)                → dominant 0.3;
	//                        carol nothing                    → 0.
	// Every session asks cpu=1 (0.1 of cpu).
	newState := func() *framework.State {
		snap := MakeSnapshot(Agents(MakeAgent("x", "cpu=10,mem=100g")), Sessions(
			MakeSession("a1", "cpu=1").User("alice").Created(1),
			MakeSession("a2", "cpu=1").User("alice").Created(2),
			MakeSession("b1", "cpu=1").User("bob").Created(3),
			MakeSession("b2", "cpu=1").User("bob").Created(4),
			MakeSession("c1", "cpu=1").User("carol").Created(5),
			MakeSession("c2", "cpu=1").User("carol").Created(6),
		))
		snap.Usage.GroupUsers = map[string]domain.Vec{"alice": Slots("cpu=1,mem=40g"), "bob": Slots("cpu=3")}
		return framework.NewState(snap)
	}
	t.Run("shares grow as sessions are placed", func(t *testing.T) {
		st := newState()
		// carol 0 → c1 placed, carol 0.1 → c2 placed, carol 0.2 →
		// carol is out; bob 0.3 → b1, bob 0.4 = alice 0.4: tie goes to the
		// older head (a1 created 1 < b2 created 4) → a1, alice max(0.2,0.4)
		// = 0.4 = bob 0.4 → a2 (created 2) … then b2.
		got := drain(st, sequence.DRF{}.Queue(st, all(st)), map[string]bool{"a1": true, "a2": true, "b1": true, "b2": true, "c1": true, "c2": true})
		if diff := cmp.Diff([]string{"c1", "c2", "b1", "a1", "a2", "b2"}, got); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})
	t.Run("unplaced sessions do not raise a share", func(t *testing.T) {
		st := newState()
		// Nothing is placed: carol stays at 0 and drains first, then bob
		// (0.3), then alice (0.4).
		got := drain(st, sequence.DRF{}.Queue(st, all(st)), nil)
		if diff := cmp.Diff([]string{"c1", "c2", "b1", "b2", "a1", "a2"}, got); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})
}
