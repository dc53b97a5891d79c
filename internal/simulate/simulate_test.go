package simulate_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

func workload(t *testing.T, jsonl string) simulate.Workload {
	t.Helper()
	w, err := simulate.ReadWorkload(strings.NewReader(jsonl), domain.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func cluster(t *testing.T, spec string) simulate.Cluster {
	t.Helper()
	cl, err := simulate.ParseCluster(spec, domain.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func setting(t *testing.T, s string) simulate.Setting {
	t.Helper()
	x, err := simulate.ParseSetting(s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// waits reads each session's wait back from the report's CDF is not
// possible, so the small cases check the per-class maxima and means.
func run(t *testing.T, w simulate.Workload, cl simulate.Cluster, settings ...simulate.Setting) simulate.Variant {
	t.Helper()
	v, err := simulate.Run(context.Background(), w, cl, settings, simulate.Options{TempDir: t.TempDir(), Samples: 10})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Three sessions that each need the whole agent: a runs 0–100 s; b (at
// 10 s) and c (at 20 s) wait for it.
const threeWhole = `{"id":"a","submit_s":0,"user":"u1","resources":{"cpu":"4","mem":"8g"},"duration_s":100}
{"id":"b","submit_s":10,"user":"u2","resources":{"cpu":"4","mem":"8g"},"duration_s":100}
{"id":"c","submit_s":20,"user":"u3","resources":{"cpu":"4","mem":"8g"},"duration_s":50}
`

func TestExactWaits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		sequencer string
		// waits sorted, as the CDF lists them.
		wantWaits []float64
		makespan  float64
	}{
		// FIFO: b starts at 100 (waited 90), c at 200 (waited 180).
		{"fifo", "fifo", []float64{0, 90, 180}, 250},
		// LIFO: at 100 c is the newest, starts (waited 80); b at 150
		// (waited 140).
		{"lifo", "lifo", []float64{0, 80, 140}, 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := run(t, workload(t, threeWhole), cluster(t, "agents=1,cpu=4,mem=16g"), setting(t, "group.sequencer="+tt.sequencer))
			all := v.Classes[0]
			if all.Started != 3 {
				t.Fatalf("started %d of 3; status %v", all.Started, v.Status)
			}
			var got []float64
			seen := map[float64]bool{}
			for _, p := range all.CDF {
				if !seen[p[0]] {
					seen[p[0]] = true
					got = append(got, p[0])
				}
			}
			if diff := cmp.Diff(tt.wantWaits, got); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if v.MakespanS != tt.makespan {
				t.Errorf("makespan %v, want %v", v.MakespanS, tt.makespan)
			}
			if diff := cmp.Diff(map[string]int{"TERMINATED": 3}, v.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeterministicReport(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	cl := cluster(t, "agents=4,cpu=32,mem=128g,cuda.shares=8")
	g, err := simulate.ParseGenSpec("sessions=150,users=6,seed=7")
	if err != nil {
		t.Fatal(err)
	}
	w, err := simulate.Generate(g, cl, reg)
	if err != nil {
		t.Fatal(err)
	}
	once := func() []byte {
		vs, err := simulate.Compare(context.Background(), w, cl, [][]simulate.Setting{{setting(t, "group.sequencer=drf")}},
			simulate.Options{Samples: 50})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := (simulate.Report{Variants: vs}).WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	first, second := once(), once()
	if !bytes.Equal(first, second) {
		t.Fatalf("two runs of the same inputs differ:\n%s", cmp.Diff(string(first), string(second)))
	}
}
