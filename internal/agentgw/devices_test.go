package agentgw_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestRegisterDevices: an agent's devices are stored with it, and a
// registration whose devices are malformed or do not add up to its
// capacity of their slot is refused, naming the slot, changing nothing.
func TestRegisterDevices(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	devs, err := domain.ParseFakeDevices("cuda:2")
	if err != nil {
		t.Fatal(err)
	}
	reg := agentrpc.Register{ID: "gpu", ResourceGroup: "default", Address: "http://127.0.0.1:9", Architecture: "x86_64",
		Runtime: "sim", Capacity: map[string]string{"cpu": "4", "mem": "8g", "cuda.device": "3"}, Devices: devs}
	code, msg := m.post("/v1/agent/register", reg)
	if code != http.StatusBadRequest || !strings.Contains(msg, "cuda.device") {
		t.Errorf("capacity 3 for 2 devices: %d %q, want 400 naming cuda.device", code, msg)
	}
	reg.Capacity["cuda.device"] = "2"
	reg.Devices = []domain.Device{devs[0], devs[0]}
	if code, msg := m.post("/v1/agent/register", reg); code != http.StatusBadRequest || !strings.Contains(msg, "repeats") {
		t.Errorf("a device twice: %d %q, want 400", code, msg)
	}
	if _, err := m.st.GetAgent(m.ctx, "gpu"); err == nil {
		t.Fatal("a refused registration stored the agent")
	}
	reg.Devices = devs
	if code, msg := m.post("/v1/agent/register", reg); code != http.StatusOK {
		t.Fatalf("register: %d %q", code, msg)
	}
	if got := m.agent("gpu").Devices; len(got) != 2 || got[1].ID != "cuda:1" {
		t.Errorf("stored devices %+v", got)
	}
}
