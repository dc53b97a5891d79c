package runtime_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestKernelEnvDevices: NVML's GPUs are named to CUDA by UUID, which no
// device ordering can confuse; fakes by index; a spec without Devices
// (an agent that hands out none) sets no device variable at all.
func TestKernelEnvDevices(t *testing.T) {
	env := runtime.KernelEnv(runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k", Devices: []domain.DeviceGrant{
		{Device: "GPU-2", Index: 2, Slot: "cuda.device", Share: 1000, Memory: 80 << 30},
		{Device: "GPU-0", Index: 0, Slot: "cuda.device", Share: 1000, Memory: 80 << 30},
	}}})
	want := map[string]string{
		"CUDA_VISIBLE_DEVICES": "GPU-0,GPU-2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
		"SOKOVAN_DEVICES": "GPU-0,GPU-2", "SOKOVAN_DEVICE_MEM": "85899345920,85899345920",
	}
	got := map[string]string{}
	for k := range want {
		got[k] = env[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("device env (-want +got):\n%s", diff)
	}
	env = runtime.KernelEnv(runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k",
		Env: map[string]string{"CUDA_VISIBLE_DEVICES": "0"}}})
	if env["CUDA_VISIBLE_DEVICES"] != "0" || env["SOKOVAN_DEVICES"] != "" {
		t.Errorf("without devices the env is the session's own: %v", env)
	}
}
