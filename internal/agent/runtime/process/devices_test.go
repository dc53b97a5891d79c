package process_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestKernelSeesItsDevices: a process kernel granted devices sees exactly
// them in CUDA_VISIBLE_DEVICES, whatever its own environment asked for,
// with the memory it may use on each; one granted none on an agent with
// devices sees an empty list, which hides every GPU.
func TestKernelSeesItsDevices(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dump := func(grants []domain.DeviceGrant) map[string]string {
		t.Helper()
		out := filepath.Join(sharedDir(t), "env")
		s := h.spec("env-dump")
		s.Env = map[string]string{"ENV_OUT": out, "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
		s.Devices = grants
		h.Start(s)
		if ev := h.rec.Exit(t, s.Kernel); runtimetest.Code(ev) != 0 {
			t.Fatalf("env-dump exited %+v; logs:\n%s", ev, h.Logs(s.Kernel))
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			k, v, _ := strings.Cut(line, "=")
			got[k] = v
		}
		return got
	}
	got := dump([]domain.DeviceGrant{
		{Device: "cuda-shared:2", Index: 2, Slot: "cuda.shares", Share: 250, Memory: 4 << 30},
		{Device: "cuda-shared:0", Index: 0, Slot: "cuda.shares", Share: 500, Memory: 8 << 30},
	})
	for k, want := range map[string]string{
		"CUDA_VISIBLE_DEVICES": "0,2",
		"SOKOVAN_DEVICES":      "cuda-shared:0,cuda-shared:2",
		"SOKOVAN_DEVICE_MEM":   "8589934592,4294967296",
		"CUDA_DEVICE_ORDER":    "PCI_BUS_ID",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	got = dump([]domain.DeviceGrant{})
	if v, ok := got["CUDA_VISIBLE_DEVICES"]; !ok || v != "" {
		t.Errorf("no grants: CUDA_VISIBLE_DEVICES = %q (set %t), want empty and set", v, ok)
	}
}
