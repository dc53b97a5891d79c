package simulate_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/simulate"
)

// One GPU. u1's a1 holds it 0–3 h; u1's a2 (at 30 m) and u2's b1 (at 1 h)
// wait. At 3 h both hold nothing, so drf ties and takes the older, a2;
// fairshare has u1's three GPU-hours of history (rolled up by the hourly
// sweep) against u2's none, and takes b1.
const twoUsers = `{"id":"a1","submit_s":0,"user":"u1","resources":{"cpu":"1","mem":"1g","cuda.device":"1"},"duration_s":10800}
{"id":"a2","submit_s":1800,"user":"u1","resources":{"cpu":"1","mem":"1g","cuda.device":"1"},"duration_s":3600}
{"id":"b1","submit_s":3600,"user":"u2","resources":{"cpu":"1","mem":"1g","cuda.device":"1"},"duration_s":3600}
`

func TestSimulateFairShareWindows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sequencer string
		// the window 3 h – 4 h: who got the GPU, and the shares of all
		// GPU-hours by its end.
		share, cumulative map[string]float64
	}{
		{"drf", map[string]float64{"u1": 1}, map[string]float64{"u1": 1}},
		{"fairshare", map[string]float64{"u2": 1}, map[string]float64{"u1": 0.75, "u2": 0.25}},
	} {
		t.Run(c.sequencer, func(t *testing.T) {
			t.Parallel()
			v, err := simulate.Run(context.Background(), workload(t, twoUsers), cluster(t, "agents=1,cpu=4,mem=16g,cuda.device=1"),
				[]simulate.Setting{setting(t, "group.sequencer="+c.sequencer)},
				simulate.Options{TempDir: t.TempDir(), Samples: 10, Window: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Windows) != 5 {
				t.Fatalf("%d windows over a 5 h run, want 5: %+v", len(v.Windows), v.Windows)
			}
			w := v.Windows[3]
			if w.FromS != 3*3600 || w.Slot != "cuda.device" || w.Util != 1 {
				t.Errorf("window 3: %+v", w)
			}
			// Both users had a session live in 3 h – 4 h; one got it all:
			// Jain (1+0)²/(2·1) = 0.5.
			if d := cmp.Diff(c.share, w.Share); d != "" || w.Jain != 0.5 {
				t.Errorf("window 3 shares (-want +got):\n%s jain %v", d, w.Jain)
			}
			if d := cmp.Diff(c.cumulative, w.Cumulative); d != "" {
				t.Errorf("cumulative shares at 4 h (-want +got):\n%s", d)
			}
		})
	}
	if _, err := simulate.ParseSetting("group.fair_share_half_life=12h"); err != nil {
		t.Fatal(err)
	}
	v, err := simulate.Run(context.Background(), workload(t, twoUsers), cluster(t, "agents=1,cpu=4,mem=16g,cuda.device=1"),
		[]simulate.Setting{setting(t, "group.fair_share.user:u1=-1")}, simulate.Options{TempDir: t.TempDir()})
	if err == nil {
		t.Errorf("a negative share ran: %+v", v.Status)
	}
}
