//go:build cgo && linux

package devices

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// nvmlDevices lists the GPUs NVML sees, by NVML index (what nvidia-smi and,
// with CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA number them by) and UUID.
func nvmlDevices(_ context.Context, slot string) ([]domain.Device, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND || ret == nvml.ERROR_DRIVER_NOT_LOADED {
			return nil, fmt.Errorf("%w: %s", ErrNoDriver, nvml.ErrorString(ret))
		}
		return nil, fmt.Errorf("nvml init: %s", nvml.ErrorString(ret))
	}
	defer nvml.Shutdown()
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml device count: %s", nvml.ErrorString(ret))
	}
	out := make([]domain.Device, 0, n)
	for i := range n {
		d, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d: %s", i, nvml.ErrorString(ret))
		}
		uuid, ret := d.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml device %d uuid: %s", i, nvml.ErrorString(ret))
		}
		name, _ := d.GetName()
		var total int64
		if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			total = int64(mem.Total)
		}
		out = append(out, domain.Device{ID: uuid, Index: i, Slot: slot, Model: name, Memory: total})
	}
	return out, nil
}
