package agentgw_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
)

// A heartbeat's capacity replaces the stored one when it changed; one
// without capacity, as earlier agents send, leaves it alone.
func TestHeartbeatRefreshesCapacity(t *testing.T) {
	m := newManager(t)
	m.startAgent("a1", sim.Config{})
	epoch := m.agent("a1").Epoch
	beat := func(caps map[string]string) {
		t.Helper()
		if code, msg := m.post("/v1/agent/heartbeat", agentrpc.Heartbeat{ID: "a1", Epoch: epoch, Capacity: caps}); code != http.StatusOK {
			t.Fatalf("heartbeat: %d %s", code, msg)
		}
	}
	beat(map[string]string{"cpu": "12", "mem": "24000m"})
	want, err := m.reg.ParseSlots(map[string]string{"cpu": "12", "mem": "24000m"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, m.agent("a1").Capacity); diff != "" {
		t.Errorf("capacity after the heartbeat (-want +got):\n%s", diff)
	}
	beat(nil)
	if diff := cmp.Diff(want, m.agent("a1").Capacity); diff != "" {
		t.Errorf("capacity after a heartbeat without one (-want +got):\n%s", diff)
	}
	// A capacity the manager cannot read is skipped, not an error: the
	// heartbeat still counts.
	beat(map[string]string{"cpu": "lots"})
	if diff := cmp.Diff(want, m.agent("a1").Capacity); diff != "" {
		t.Errorf("capacity after an unreadable one (-want +got):\n%s", diff)
	}
}
