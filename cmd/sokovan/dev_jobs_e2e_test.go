package main

import (
	"strings"
	"testing"
	"time"
)

// TestJobsDrainAndGroupStatesAgainstDevMode runs issue 14's verbs end to
// end against `sokovan dev` with real process kernels: a job's gang of two
// starts only once both members are submitted, cancelling the job ends
// them, an emptied agent drains, and the default group cannot be drained.
func TestJobsDrainAndGroupStatesAgainstDevMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev mode with real kernels")
	}
	t.Parallel()
	d := startDevBinary(t, 2)
	run := d.run
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	if out, code := run("job", "create", "gang", "--min-available", "2"); code != 0 {
		t.Fatalf("job create: %d\n%s", code, out)
	}
	if out, code := run("session", "create", "--image", "sleep", "--cpu", "1", "--name", "driver", "--job", "gang"); code != 0 {
		t.Fatalf("first member: %d\n%s", code, out)
	}
	until("the gang blocker", func() bool {
		out, _ := run("session", "why", "driver")
		return strings.Contains(out, "1 of 2 members submitted")
	})
	if out, code := run("session", "create", "--image", "sleep", "--cpu", "1", "--name", "exec", "--job", "gang", "--wait"); code != 0 {
		t.Fatalf("second member --wait: %d\n%s", code, out)
	}
	until("job RUNNING", func() bool {
		out, _ := run("job", "show", "gang")
		return strings.Contains(out, "state:           RUNNING")
	})
	if out, code := run("job", "rm", "gang"); code != 0 {
		t.Fatalf("job rm: %d\n%s", code, out)
	}
	until("job FAILED with its members ended", func() bool {
		out, _ := run("job", "show", "gang")
		return strings.Contains(out, "state:           FAILED") && strings.Count(out, "TERMINATED") == 2
	})

	// Nothing runs any more, so a drain with a deadline is drained at once.
	if out, code := run("agent", "drain", "dev-agent-1", "--deadline", "1h", "--wait"); code != 0 || !strings.Contains(out, "drained") {
		t.Fatalf("agent drain --wait: %d\n%s", code, out)
	}

	// Draining the default group would leave a dev cluster that accepts
	// nothing: set --state DRAINING points at rm, and rm refuses it.
	if out, code := run("rg", "set", "default", "--state", "DRAINING"); code == 0 || !strings.Contains(out, "rg rm default") {
		t.Fatalf("rg set DRAINING: exit %d\n%s", code, out)
	}
	if out, code := run("rg", "rm", "default", "--yes"); code == 0 || !strings.Contains(out, "default group") {
		t.Fatalf("rg rm default: exit %d\n%s", code, out)
	}
	if out, code := run("session", "create", "--image", "sleep", "--name", "late"); code != 0 {
		t.Fatalf("submit after the refused drains: exit %d\n%s", code, out)
	}

	if err := d.stop(); err != nil {
		t.Error(err)
	}
}
