package main

import (
	"strings"
	"testing"
)

// TestArrayAgainstDevMode runs an array's elements as real processes on
// dev mode's agents: each element's command sees its own index and the
// count (which the agent must accept although its own SOKOVAN_ names are
// reserved), --wait-end waits for all of them and exits 0, and logs of
// name[i] show what element i printed.
func TestArrayAgainstDevMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev mode with real kernels")
	}
	t.Parallel()
	d := startDevBinary(t, 2)
	out := d.mustRun("session", "create", "--image", "sleep", "--type", "batch", "--cpu", "0.5", "--mem", "64m",
		"--name", "sweep", "--array", "0-3%2", "--wait-end", "--timeout", "60s",
		"--", "sh", "-c", `echo "element $SOKOVAN_ARRAY_INDEX of $SOKOVAN_ARRAY_COUNT"`)
	// The last line sums up all four, and no status is counted twice.
	if !strings.Contains(out, "(%2): 4 TERMINATED; outcome success") || strings.Contains(out, "PENDING, 4 TERMINATED") {
		t.Errorf("create --wait-end printed:\n%s", out)
	}
	for _, i := range []string{"0", "2", "3"} {
		if logs := d.mustRun("session", "logs", "sweep["+i+"]"); !strings.Contains(logs, "element "+i+" of 4") {
			t.Errorf("logs of sweep[%s]:\n%s", i, logs)
		}
	}
}
