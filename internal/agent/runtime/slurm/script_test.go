package slurm

import (
	"errors"
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
			spec := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k"}, Registry: domain.DefaultRegistry(),
				TimeLimit: tc.limit}
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

// Whole GPUs are asked of SLURM as --gres=gpu:N; a kernel asking none
// gets no --gres, and one asking a fraction of a GPU is refused, since
// SLURM would hand it a whole one (or nothing) instead.
func TestSbatchGPUs(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	for _, tc := range []struct {
		name    string
		slots   map[string]string
		want    []string // the --gres options
		invalid bool
	}{
		{"two devices", map[string]string{"cpu": "1", "cuda.device": "2"}, []string{"--gres=gpu:2"}, false},
		{"no GPU", map[string]string{"cpu": "1"}, nil, false},
		{"a share", map[string]string{"cpu": "1", "cuda.shares": "0.5"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			slots, err := reg.ParseSlots(tc.slots)
			if err != nil {
				t.Fatal(err)
			}
			spec := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k"}, Registry: reg, Slots: slots}
			err = checkGPUs(spec)
			if got := errors.Is(err, runtime.ErrInvalidSpec); got != tc.invalid {
				t.Fatalf("checkGPUs = %v, want invalid %t", err, tc.invalid)
			}
			if tc.invalid {
				return
			}
			var got []string
			for _, a := range sbatchArgs(Config{Partition: "p"}, spec, "n", "o", "d") {
				if strings.HasPrefix(a, "--gres") {
					got = append(got, a)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("--gres options %q, want %q", got, tc.want)
			}
		})
	}
}
