package simulate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

func TestReadWorkloadRefusesBadLines(t *testing.T) {
	t.Parallel()
	good := `{"id":"a","submit_s":0,"user":"u","resources":{"cpu":"1"},"duration_s":5}` + "\n"
	tests := []struct {
		name      string
		line      string
		wantLine  int
		wantField string
	}{
		{"wrong type", `{"submit_s":"soon","user":"u","duration_s":1}`, 2, "submit_s"},
		{"unknown field", `{"user":"u","duration_s":1,"gpus":2}`, 2, "gpus"},
		{"negative duration", `{"user":"u","duration_s":-1}`, 2, "duration_s"},
		{"no user", `{"duration_s":1}`, 2, "user"},
		{"bad quantity", `{"user":"u","duration_s":1,"resources":{"mem":"lots"}}`, 2, "resources.mem"},
		{"unknown slot", `{"user":"u","duration_s":1,"resources":{"tpu":"1"}}`, 2, "resources.tpu"},
		{"cluster too big", `{"user":"u","duration_s":1,"cluster_size":65}`, 2, "cluster_size"},
		{"priority out of range", `{"user":"u","duration_s":1,"priority":101}`, 2, "priority"},
		{"unknown type", `{"user":"u","duration_s":1,"type":"cron"}`, 2, "type"},
		{"unknown dependency", `{"user":"u","duration_s":1,"depends_on":["a","zz"]}`, 2, "depends_on[1]"},
		{"duplicate id", `{"id":"a","user":"u","duration_s":1}`, 2, "id"},
		{"exit code", `{"user":"u","duration_s":1,"exit_code":300}`, 2, "exit_code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := simulate.ReadWorkload(strings.NewReader(good+tt.line+"\n"), domain.DefaultRegistry())
			var le *simulate.LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a LineError", err)
			}
			if le.Line != tt.wantLine || le.Field != tt.wantField {
				t.Errorf("got line %d field %q (%v), want line %d field %q", le.Line, le.Field, err, tt.wantLine, tt.wantField)
			}
		})
	}
}

func TestReadWorkloadDefaultsAndOrder(t *testing.T) {
	t.Parallel()
	w := workload(t, `# comment
{"id":"late","submit_s":5,"user":"u","duration_s":1}

{"submit_s":1,"user":"u","duration_s":1,"cluster_size":2}
`)
	got := []string{}
	for _, s := range w.Sessions {
		got = append(got, s.ID+" "+s.Type+" "+s.ClusterMode)
	}
	// Sorted by submission; an id-less line is named by its position.
	want := []string{"s000002 batch multi-node", "late batch single-node"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	if p := *w.Sessions[0].Priority; p != 10 {
		t.Errorf("default priority %d, want 10 as the API gives", p)
	}
}

func TestGenerateIsSeeded(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	cl := cluster(t, "agents=10,cpu=64,mem=256g,cuda.shares=8")
	gen := func(spec string) simulate.Workload {
		g, err := simulate.ParseGenSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		w, err := simulate.Generate(g, cl, reg)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	a, b, c := gen("sessions=500,seed=3"), gen("sessions=500,seed=3"), gen("sessions=500,seed=4")
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different workloads (-a +b):\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Fatal("different seeds gave the same workload")
	}
	single, gangs := 0, 0
	for _, s := range a.Sessions {
		if s.ClusterSize > 1 {
			gangs++
			if s.Resources["cuda.shares"] != "8" {
				t.Errorf("gang %s kernels ask %s GPUs, want a whole 8-GPU agent each", s.ID, s.Resources["cuda.shares"])
			}
		}
		if s.Resources["cuda.shares"] == "1" || s.Resources["cuda.shares"] == "0.5" {
			single++
		}
	}
	// The mix gives 60% one GPU or less and 5% above eight; a 500-draw
	// sample lands well inside these bounds.
	if single < 250 || single > 350 || gangs == 0 || gangs > 50 {
		t.Errorf("size mix off: %d of 500 at <=1 GPU, %d gangs", single, gangs)
	}
}

func TestParseGenSpecRefuses(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"sessions=0", "users=x", "bogus=1", "diurnal=2", "load=0", "seed=-1", "sessions",
		"limit_max=3,limit_min=0.5", "limit_max=2,limit_min=3", "interactive=0.6,inference=0.5", "mix=1", "mix=1:0",
		"mix=x:1", "mix=1:1:0", "mix=1:1:2:3"} {
		if _, err := simulate.ParseGenSpec(spec); err == nil {
			t.Errorf("ParseGenSpec(%q) accepted it", spec)
		}
	}
}

// TestGenerateLimitsAndMix: limit_min/limit_max give every batch and
// interactive session a limit of its run time times a factor in range;
// mix replaces the size mix; interactive and inference set the type
// shares. Without them a seed's workload is what it was.
func TestGenerateLimitsAndMix(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	cl := cluster(t, "agents=16,cpu=64,mem=256g,cuda.shares=8")
	gen := func(spec string) simulate.Workload {
		t.Helper()
		g, err := simulate.ParseGenSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		w, err := simulate.Generate(g, cl, reg)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := gen("sessions=400,seed=2,mix=1:0.9|32:0.1:4,inference=0,limit_min=1.2,limit_max=3")
	gangs := 0
	for _, s := range w.Sessions {
		if s.Type == "inference" {
			t.Errorf("%s is inference with inference=0", s.ID)
		}
		if f := s.TimeLimit / s.Duration; f < 1.2 || f > 3+1/s.Duration {
			t.Errorf("%s: limit %v for a run of %v: factor %.3f, want 1.2 to 3", s.ID, s.TimeLimit, s.Duration, f)
		}
		switch s.Resources["cuda.shares"] {
		case "1":
		case "8":
			if s.ClusterSize != 4 {
				t.Errorf("%s: a 32-GPU session over %d agents, want 4", s.ID, s.ClusterSize)
			}
			gangs++
		default:
			t.Errorf("%s asks %s GPUs, outside the mix", s.ID, s.Resources["cuda.shares"])
		}
	}
	if gangs < 20 || gangs > 65 {
		t.Errorf("%d of 400 are 32-GPU gangs, want about 40", gangs)
	}
	plain, keyed := gen("sessions=200,seed=5"), gen("sessions=200,seed=5,interactive=0.2,inference=0.1")
	if diff := cmp.Diff(plain, keyed); diff != "" {
		t.Errorf("the default type shares changed the workload (-plain +keyed):\n%s", diff)
	}
}
