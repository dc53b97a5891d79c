package simulate_test

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

// BenchmarkSimulate replays a generated workload on a generated cluster.
// SOKOVAN_SIM_SESSIONS and SOKOVAN_SIM_AGENTS size it (default 1,000
// sessions on 100 agents); the full-size case is 100000 and 1000.
// SOKOVAN_SIM_TICK (a duration) sets Options.Tick.
func BenchmarkSimulate(b *testing.B) {
	sessions, agents := envInt(b, "SOKOVAN_SIM_SESSIONS", 1000), envInt(b, "SOKOVAN_SIM_AGENTS", 100)
	var tick time.Duration
	if s := os.Getenv("SOKOVAN_SIM_TICK"); s != "" {
		var err error
		if tick, err = time.ParseDuration(s); err != nil {
			b.Fatalf("SOKOVAN_SIM_TICK=%q: %v", s, err)
		}
	}
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
	defer simulate.BatchGC()() // as sokovan simulate runs
	b.ResetTimer()
	cpu0 := cpuSeconds()
	var v simulate.Variant
	for b.Loop() {
		if v, err = simulate.Run(context.Background(), w, cl, nil, simulate.Options{Tick: tick}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sessions)*float64(b.N)/b.Elapsed().Seconds(), "sessions/s")
	b.ReportMetric(float64(v.Cycles)/float64(sessions), "cycles/session")
	b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(sessions)/float64(b.N), "cpu-ms/session")
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

// cpuSeconds is the process's user and system CPU time so far. On a shared
// machine wall time swings with others' load; CPU time much less.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
