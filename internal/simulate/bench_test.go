package simulate_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

// BenchmarkSimulate replays a generated workload on a generated cluster.
// SOKOVAN_SIM_SESSIONS and SOKOVAN_SIM_AGENTS size it (default 1,000
// sessions on 100 agents); the full-size case is 100000 and 1000.
func BenchmarkSimulate(b *testing.B) {
	sessions, agents := envInt(b, "SOKOVAN_SIM_SESSIONS", 1000), envInt(b, "SOKOVAN_SIM_AGENTS", 100)
	reg := domain.DefaultRegistry()
	cl, err := simulate.ParseCluster("agents="+strconv.Itoa(agents)+",cpu=64,mem=256g,cuda.shares=8", reg)
	if err != nil {
		b.Fatal(err)
	}
	g, err := simulate.ParseGenSpec("sessions=" + strconv.Itoa(sessions) + ",users=50,seed=1")
	if err != nil {
		b.Fatal(err)
	}
	w, err := simulate.Generate(g, cl, reg)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var v simulate.Variant
	for b.Loop() {
		if v, err = simulate.Run(context.Background(), w, cl, nil, simulate.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sessions)*float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
	b.ReportMetric(float64(v.Cycles)/float64(sessions), "cycles/session")
}

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q is not a whole number above zero", name, s)
	}
	return n
}
