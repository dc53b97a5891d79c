package main

import (
	"strings"
	"testing"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestBlockerHint: the hint names what would end the wait; a gang short of
// members waits for its submitter, not for resources.
func TestBlockerHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		b       v1.Blocker
		has     string
		hasNone string
	}{
		{name: "gang short of members", b: v1.Blocker{Kind: "gang", Scope: "job:j1", Slot: "members", Requested: "3",
			Available: "1", Detail: "1 of 3 members submitted"},
			has: "submit the job's other members (sokovan session create --job j1 …)", hasNone: "wait for running sessions"},
		{name: "gang that does not fit whole", b: v1.Blocker{Kind: "gang", Scope: "job:j1",
			Detail: "only 1 of the 3 members needed fit together; none is placed"},
			has: "wait for running sessions to free resources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := blockerHint(tc.b)
			if !strings.Contains(got, tc.has) || tc.hasNone != "" && strings.Contains(got, tc.hasNone) {
				t.Errorf("blockerHint() = %q, want it to say %q and not %q", got, tc.has, tc.hasNone)
			}
		})
	}
}
