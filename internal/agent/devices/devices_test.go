package devices_test

import (
	"errors"
	"testing"

	"github.com/sokovan-go/sokovan/internal/agent/devices"
)

// TestDiscover: fakes are declared by the flag; none means none; and on a
// machine without an NVIDIA driver (as CI is) auto finds none and starts,
// while nvml, asked for explicitly, says there is no driver.
func TestDiscover(t *testing.T) {
	ctx := t.Context()
	devs, err := devices.Discover(ctx, "cuda:3")
	if err != nil || len(devs) != 3 || devs[2].ID != "cuda:2" || devs[2].Slot != "cuda.device" {
		t.Fatalf("cuda:3 = %+v, %v", devs, err)
	}
	for _, spec := range []string{"", "none"} {
		if devs, err := devices.Discover(ctx, spec); err != nil || len(devs) != 0 {
			t.Errorf("%q = %+v, %v; want none", spec, devs, err)
		}
	}
	if _, err := devices.Discover(ctx, "tpu:2"); err == nil {
		t.Error("tpu:2 accepted")
	}
	nv, nvErr := devices.Discover(ctx, "nvml")
	if errors.Is(nvErr, devices.ErrNoDriver) {
		if devs, err := devices.Discover(ctx, "auto"); err != nil || len(devs) != 0 {
			t.Errorf("auto without a driver = %+v, %v; want none and no error", devs, err)
		}
		return
	}
	// A machine with a driver: auto finds what nvml finds.
	if nvErr != nil {
		t.Fatalf("nvml: %v", nvErr)
	}
	auto, err := devices.Discover(ctx, "auto")
	if err != nil || len(auto) != len(nv) {
		t.Errorf("auto = %d devices, %v; nvml found %d", len(auto), err, len(nv))
	}
	for i, d := range nv {
		if d.ID == "" || d.Index != i || d.Slot != "cuda.device" || d.Memory <= 0 {
			t.Errorf("nvml device %d: %+v", i, d)
		}
	}
	t.Logf("nvml found %+v", nv)
}
