package sequence_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
	"github.com/sokovan-go/sokovan/internal/scheduler/sequence"
)

// decayed builds a history row: slot name → decayed slot-seconds.
func decayed(snap *framework.Snapshot, project, user string, slots map[string]float64) framework.DecayedUsage {
	d := framework.DecayedUsage{Project: project, User: user, Slots: make([]float64, snap.Slots.Len())}
	for name, v := range slots {
		id, ok := snap.Slots.Lookup(name)
		if !ok {
			panic(name)
		}
		d.Slots[id] = v
	}
	return d
}

type factorRow struct {
	User          string
	Usage, Shares float64
	Slot          string
	Factor        float64
}

// TestFairShareFactors tabulates F = 2^(-U/S), U the dominant share of
// decayed use, S project share × user share among the active ones.
func TestFairShareFactors(t *testing.T) {
	t.Parallel()
	const gib = float64(1 << 30)
	for _, c := range []struct {
		name    string
		shares  map[string]float64
		history func(*framework.Snapshot) []framework.DecayedUsage
		carol   bool // carol, of project p2, has a pending session
		want    []factorRow
	}{
		{name: "no history: everyone 1", history: func(*framework.Snapshot) []framework.DecayedUsage { return nil },
			want: []factorRow{{"alice", 0, 0.5, "", 1}, {"bob", 0, 0.5, "", 1}}},
		{
			// cpu 3e6 + 1e6 = 4e6: U 0.75 and 0.25; S 1 × 1/2.
			// 2^(-0.75/0.5) = 2^-1.5, 2^(-0.25/0.5) = 2^-0.5.
			name: "equal shares",
			want: []factorRow{{"alice", 0.75, 0.5, "cpu", math.Exp2(-1.5)}, {"bob", 0.25, 0.5, "cpu", math.Exp2(-0.5)}},
		},
		{
			// alice 3 shares, bob 1: S 3/4 and 1/4; usage in the same
			// proportion gives both 2^-1.
			name: "use in proportion to shares is even", shares: map[string]float64{"user:alice": 3},
			want: []factorRow{{"alice", 0.75, 0.75, "cpu", 0.5}, {"bob", 0.25, 0.25, "cpu", 0.5}},
		},
		{
			// p1 and p2 active: 1/2 each; p1's two users 1/2 each of that.
			// alice 2^(-0.75/0.25) = 2^-3; carol has no use: 1.
			name: "an idle project halves the others' shares", carol: true,
			want: []factorRow{{"alice", 0.75, 0.25, "cpu", 0.125}, {"bob", 0.25, 0.25, "cpu", 0.5}, {"carol", 0, 0.5, "", 1}},
		},
		{
			// p1 with 3 shares, p2 with 1: S(alice) = 3/4 × 1/2.
			name: "project shares", carol: true, shares: map[string]float64{"project:p1": 3},
			want: []factorRow{{"alice", 0.75, 0.375, "cpu", 0.25}, {"bob", 0.25, 0.375, "cpu", math.Exp2(-0.25 / 0.375)},
				{"carol", 0, 0.25, "", 1}},
		},
		{
			// cpu: alice 0.75, bob 0.25; mem: alice 1/10, bob 9/10. The
			// dominant slot counts: alice 0.75 (cpu), bob 0.9 (mem).
			name: "dominant slot",
			history: func(s *framework.Snapshot) []framework.DecayedUsage {
				return []framework.DecayedUsage{
					decayed(s, "p1", "alice", map[string]float64{"cpu": 3e6, "mem": 1 * gib}),
					decayed(s, "p1", "bob", map[string]float64{"cpu": 1e6, "mem": 9 * gib}),
				}
			},
			want: []factorRow{{"alice", 0.75, 0.5, "cpu", math.Exp2(-1.5)}, {"bob", 0.9, 0.5, "mem", math.Exp2(-1.8)}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			bs := []*SessionB{MakeSession("a1", "cpu=1").User("alice").Project("p1"),
				MakeSession("b1", "cpu=1").User("bob").Project("p1")}
			if c.carol {
				bs = append(bs, MakeSession("c1", "cpu=1").User("carol").Project("p2"))
			}
			snap := MakeSnapshot(nil, Sessions(bs...))
			snap.Group.FairShare.Shares = c.shares
			if c.history == nil {
				c.history = func(s *framework.Snapshot) []framework.DecayedUsage {
					return []framework.DecayedUsage{decayed(s, "p1", "alice", map[string]float64{"cpu": 3e6}),
						decayed(s, "p1", "bob", map[string]float64{"cpu": 1e6})}
				}
			}
			snap.Decayed = c.history(snap)
			var got []factorRow
			for _, f := range sequence.Factors(snap) {
				got = append(got, factorRow{f.User, f.Usage, f.Shares, f.Slot, f.Factor})
			}
			if d := cmp.Diff(c.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); d != "" {
				t.Errorf("factors (-want +got):\n%s", d)
			}
		})
	}
}

func TestFairShareOrder(t *testing.T) {
	t.Parallel()
	// alice used cpu 3e6 slot-seconds, bob 1e6. Her sessions are older.
	newState := func() *framework.State {
		snap := MakeSnapshot(Agents(MakeAgent("x", "cpu=10,mem=100g")), Sessions(
			MakeSession("a1", "cpu=1").User("alice").Created(1),
			MakeSession("a2", "cpu=1").User("alice").Created(2),
			MakeSession("b1", "cpu=1").User("bob").Created(3),
			MakeSession("b2", "cpu=1").User("bob").Created(4),
		))
		snap.Decayed = []framework.DecayedUsage{decayed(snap, "p1", "alice", map[string]float64{"cpu": 3e6}),
			decayed(snap, "p1", "bob", map[string]float64{"cpu": 1e6})}
		return framework.NewState(snap)
	}
	t.Run("history, not age, orders", func(t *testing.T) {
		// Nothing placed: bob (F 2^-0.5) drains before alice (2^-1.5).
		st := newState()
		got := drain(st, sequence.FairShare{}.Queue(st, all(st)), nil)
		if d := cmp.Diff([]string{"b1", "b2", "a1", "a2"}, got); d != "" {
			t.Errorf("order (-want +got):\n%s", d)
		}
	})
	t.Run("a placement is charged an hour of its slots", func(t *testing.T) {
		// b1 placed: bob 1e6 + 1000 × 3600 = 4.6e6 of 7.6e6 → F 2^-1.21
		// < alice's 3/7.6 → 2^-0.79: a1. Then alice 6.6e6 of 11.2e6 (U
		// 0.589) against bob's 0.411: b2, then a2.
		st := newState()
		got := drain(st, sequence.FairShare{}.Queue(st, all(st)), map[string]bool{"a1": true, "a2": true, "b1": true, "b2": true})
		if d := cmp.Diff([]string{"b1", "a1", "b2", "a2"}, got); d != "" {
			t.Errorf("order (-want +got):\n%s", d)
		}
	})
	t.Run("equal factors go to the older head", func(t *testing.T) {
		st := newState()
		st.Snap.Decayed = nil
		st = framework.NewState(st.Snap)
		got := drain(st, sequence.FairShare{}.Queue(st, all(st)), nil)
		if d := cmp.Diff([]string{"a1", "a2", "b1", "b2"}, got); d != "" {
			t.Errorf("order (-want +got):\n%s", d)
		}
	})
}

// TestFairShareFactorNeverRisesWithUsage: more use of any slot by one
// association never raises its factor, whatever the others and the shares.
func TestFairShareFactorNeverRisesWithUsage(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "associations")
		var bs []*SessionB
		snap := MakeSnapshot(nil, nil)
		slots := []string{"cpu", "mem"}
		shares := map[string]float64{}
		var history []framework.DecayedUsage
		for i := range n {
			user, project := string(rune('a'+i)), "p"+string(rune('0'+rapid.IntRange(0, 2).Draw(t, "project")))
			bs = append(bs, MakeSession(user+"1", "cpu=1").User(user).Project(project))
			if rapid.Bool().Draw(t, "has share") {
				shares["user:"+user] = rapid.Float64Range(0.1, 10).Draw(t, "user share")
			}
			if rapid.Bool().Draw(t, "has project share") {
				shares["project:"+project] = rapid.Float64Range(0.1, 10).Draw(t, "project share")
			}
			use := map[string]float64{}
			for _, s := range slots {
				use[s] = rapid.Float64Range(0, 1e9).Draw(t, "use")
			}
			history = append(history, decayed(snap, project, user, use))
		}
		snap.Pending = Sessions(bs...)
		snap.Group.FairShare.Shares = shares
		snap.Decayed = history
		who := rapid.IntRange(0, n-1).Draw(t, "who")
		slot, _ := snap.Slots.Lookup(rapid.SampledFrom(slots).Draw(t, "slot"))
		factor := func() float64 {
			for _, f := range sequence.Factors(snap) {
				if f.User == history[who].User && f.Project == history[who].Project {
					if f.Factor <= 0 || f.Factor > 1 {
						t.Fatalf("factor %v outside (0, 1]", f.Factor)
					}
					return f.Factor
				}
			}
			t.Fatalf("no factor for %s", history[who].User)
			return 0
		}
		before := factor()
		snap.Decayed = append([]framework.DecayedUsage(nil), history...)
		more := append([]float64(nil), history[who].Slots...)
		more[slot] += rapid.Float64Range(0, 1e9).Draw(t, "more")
		snap.Decayed[who].Slots = more
		if after := factor(); after > before {
			t.Fatalf("%s used more %s and the factor rose from %v to %v", history[who].User, snap.Slots.Type(slot).Name, before, after)
		}
	})
}
