package simulate_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/simulate"
)

func TestApplyLimits(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []float64
		err  bool
	}{
		{"", []float64{0, 600}, false},
		{"runtime", []float64{120, 60}, false},
		{"factor:2", []float64{180, 60}, false},
		{"none", []float64{0, 0}, false},
		{"factor:0.5", nil, true},
		{"twice", nil, true},
	} {
		w := simulate.Workload{Sessions: []simulate.Session{{ID: "a", Duration: 90}, {ID: "b", Duration: 30, TimeLimit: 600}}}
		err := simulate.ApplyLimits(&w, c.spec)
		if (err != nil) != c.err {
			t.Errorf("%q: error %v, want error %v", c.spec, err, c.err)
			continue
		}
		if c.err {
			continue
		}
		for i, want := range c.want {
			if got := w.Sessions[i].TimeLimit; got != want {
				t.Errorf("%q: %s's limit %v s, want %v s", c.spec, w.Sessions[i].ID, got, want)
			}
		}
	}
}
