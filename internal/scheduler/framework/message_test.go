package framework_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// TestBlockerMessage: a blocker's message states the numbers as `agent
// ls` and the policies would, not numbers derived from the wrong field.
func TestBlockerMessage(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	for _, tc := range []struct {
		name string
		b    framework.Blocker
		want string
		// exceeds is whether waiting for a larger agent or quota is the
		// remedy.
		exceeds bool
	}{
		// The validator: Requested is the one session asking, Available
		// max 1 less 1 running, Capacity the max.
		{name: "concurrency at its limit", b: framework.Blocker{Kind: framework.BlockConcurrency, Scope: "user:alice",
			Requested: 1, Available: 0, Capacity: 1},
			want: "user:alice runs 1 of at most 1 concurrent sessions"},
		// 3 - 1 left = 2 running.
		{name: "concurrency of three", b: framework.Blocker{Kind: framework.BlockConcurrency, Scope: "project:p1",
			Requested: 1, Available: 1, Capacity: 3},
			want: "project:p1 runs 2 of at most 3 concurrent sessions"},
		// Members missing are no shortage of resources: nothing exceeds.
		{name: "gang short of members", b: framework.Blocker{Kind: framework.BlockGang, Scope: "job:j1",
			Slot: framework.MembersSlot, Requested: 3, Available: 1, Detail: "1 of 3 members submitted"},
			want: "job:j1: 1 of 3 members submitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.b.Message(reg); got != tc.want {
				t.Errorf("Message() = %q, want %q", got, tc.want)
			}
			if got := tc.b.ExceedsCapacity(); got != tc.exceeds {
				t.Errorf("ExceedsCapacity() = %v, want %v", got, tc.exceeds)
			}
		})
	}
}
