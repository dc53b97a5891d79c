package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

func TestArrayCap(t *testing.T) {
	t.Parallel()
	// One 16-cpu agent; every element asks 1 cpu, so capacity would place
	// all eight: the cap alone holds them back.
	tests := []struct {
		name    string
		cap     int
		running int // elements already holding resources
		want    int // placed this round
	}{
		{"cap 3, none running: 3 start", 3, 0, 3},
		{"cap 3, 2 running: 1 starts", 3, 2, 1},
		{"cap 3, 3 running: none start", 3, 3, 0},
		{"cap above the count: all start", 20, 0, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var bs []*SessionB
			for i := range 8 {
				bs = append(bs, MakeSession(fmt.Sprintf("e%d", i), "cpu=1").Created(i).Array("arr", i))
			}
			// A session of no array beside them is not held by the cap.
			bs = append(bs, MakeSession("plain", "cpu=1").Created(100))
			snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=16,mem=64g")), Sessions(bs...))
			snap.Arrays = map[domain.ArrayID]framework.ArrayInfo{
				"arr": {Name: "sweep", MaxRunning: tt.cap, Running: tt.running},
			}
			plan := schedule(t, snap)
			placed := placedOn(plan)
			if _, ok := placed["plain"]; !ok {
				t.Errorf("the session of no array was not placed")
			}
			if got := len(placed) - 1; got != tt.want {
				t.Fatalf("placed %d elements, want %d", got, tt.want)
			}
			if tt.want == 8 {
				return
			}
			b := blockersOf(plan, "e7")
			if len(b) != 1 || b[0].Kind != framework.BlockArray {
				t.Fatalf("e7's blockers = %+v, want one array blocker", b)
			}
			want := fmt.Sprintf("array sweep: %d of %d elements running (%%%d)", tt.cap, tt.cap, tt.cap)
			if got := b[0].Message(Registry()); got != want {
				t.Errorf("message = %q, want %q", got, want)
			}
		})
	}
}

// TestArrayUncommit: a placement taken back (a gang that does not fit
// whole) gives back its count toward the array's cap, as it gives back
// its quota, so later elements of the round are not held for it.
func TestArrayUncommit(t *testing.T) {
	t.Parallel()
	snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=16,mem=64g")),
		Sessions(MakeSession("e0", "cpu=1").Array("arr", 0)))
	snap.Arrays = map[domain.ArrayID]framework.ArrayInfo{"arr": {Name: "sweep", MaxRunning: 2, Running: 1}}
	st := framework.NewState(snap)
	s := &st.Sessions[0]
	st.Commit(s)
	if _, running, _ := st.ArrayRunning("arr"); running != 2 {
		t.Fatalf("after Commit %d running, want 2", running)
	}
	st.Uncommit(s)
	if _, running, _ := st.ArrayRunning("arr"); running != 1 {
		t.Fatalf("after Uncommit %d running, want 1", running)
	}
}
