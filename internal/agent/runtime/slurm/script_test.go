package slurm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// The session's time limit is the job's --time, rounded up to whole
// minutes; the agent's --slurm-time covers sessions without one.
func TestSbatchTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		agent, limit time.Duration
		want         string // the --time option, "" when none
	}{
		{"neither", 0, 0, ""},
		{"agent default only", 2 * time.Hour, 0, "--time=120"},
		{"session limit wins", 2 * time.Hour, 30 * time.Minute, "--time=30"},
		{"seconds round up", 0, 90 * time.Second, "--time=2"},  // 1.5 min → 2
		{"under a minute is one", 0, time.Second, "--time=1"},  // 1/60 min → 1
		{"whole minutes stay", 0, 3 * time.Hour, "--time=180"}, // exact
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := runtime.Spec{Kernel: "k", Registry: domain.DefaultRegistry(), TimeLimit: tc.limit}
			args := sbatchArgs(Config{Partition: "p", TimeLimit: tc.agent}, spec, "n", "o", "d")
			i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--time=") })
			got := ""
			if i >= 0 {
				got = args[i]
			}
			if got != tc.want {
				t.Errorf("--time option %q, want %q (args %q)", got, tc.want, args)
			}
		})
	}
}
