package simulate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ApplyLimits gives each session a time limit from how long it runs, as
// a user submitting the trace's jobs would have: "runtime" its own run
// time, "factor:F" F times it (the over-estimate users make), "none" no
// limit, and "" leaves the workload's own. Limits are whole minutes,
// rounded up, as SLURM's --time is. Without limits reservations have no
// ends to plan from, and `reserve` behaves as `skip` does.
func ApplyLimits(w *Workload, spec string) error {
	factor := 0.0
	switch {
	case spec == "":
		return nil
	case spec == "none":
	case spec == "runtime":
		factor = 1
	case strings.HasPrefix(spec, "factor:"):
		f, err := strconv.ParseFloat(strings.TrimPrefix(spec, "factor:"), 64)
		if err != nil || f < 1 || math.IsInf(f, 0) {
			return fmt.Errorf("--limits %q: the factor must be a number of at least 1", spec)
		}
		factor = f
	default:
		return fmt.Errorf("--limits %q: want runtime, factor:F or none", spec)
	}
	for i := range w.Sessions {
		s := &w.Sessions[i]
		if factor == 0 {
			s.TimeLimit = 0
			continue
		}
		s.TimeLimit = math.Ceil(s.Duration*factor/60) * 60
	}
	return nil
}
