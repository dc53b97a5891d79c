package runtime

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Environment variables that expose a kernel's devices.
const (
	// EnvCUDAVisible is CUDA's own: the runtime library enumerates only the
	// listed devices, so a kernel cannot pick up a neighbour's GPU.
	EnvCUDAVisible = "CUDA_VISIBLE_DEVICES"
	// EnvCUDAOrder makes CUDA number devices in PCI bus order, as NVML and
	// nvidia-smi do; its default (fastest first) would let an index name
	// another GPU than the one granted on a mixed host.
	EnvCUDAOrder = "CUDA_DEVICE_ORDER"
	// EnvDevices lists the granted device ids (UUIDs where the driver
	// reports them), in CUDA_VISIBLE_DEVICES' order.
	EnvDevices = "SOKOVAN_DEVICES"
	// EnvDeviceMem lists the device memory in bytes the kernel may use on
	// each device, in the same order: all of it for a whole device, its
	// share for cuda.shares. CUDA cannot enforce a share; frameworks can
	// be told to keep to it (a per-process memory fraction).
	EnvDeviceMem = "SOKOVAN_DEVICE_MEM"
)

// Grants returns the kernel's grants merged per device and sorted by
// index, the order every device variable uses.
func (s Spec) Grants() []domain.DeviceGrant {
	var out []domain.DeviceGrant
	for _, g := range s.Devices {
		i := slices.IndexFunc(out, func(o domain.DeviceGrant) bool { return o.Device == g.Device })
		if i >= 0 {
			out[i].Share += g.Share
			out[i].Memory += g.Memory
			continue
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b domain.DeviceGrant) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Device, b.Device))
	})
	return out
}

// deviceEnv adds the device variables when the agent hands out devices
// (Spec.Devices not nil): a kernel granted none gets an empty
// CUDA_VISIBLE_DEVICES, which hides every GPU, rather than inheriting all.
func deviceEnv(s Spec, env map[string]string) {
	if s.Devices == nil {
		return
	}
	var idx, ids, mem []string
	for _, g := range s.Grants() {
		if !strings.HasPrefix(g.Slot, "cuda.") {
			continue
		}
		idx = append(idx, VisibleID(g))
		ids = append(ids, g.Device)
		mem = append(mem, strconv.FormatInt(g.Memory, 10))
	}
	env[EnvCUDAVisible] = strings.Join(idx, ",")
	env[EnvCUDAOrder] = "PCI_BUS_ID"
	env[EnvDevices] = strings.Join(ids, ",")
	env[EnvDeviceMem] = strings.Join(mem, ",")
}

// VisibleID is how a grant's device is named to CUDA and to the NVIDIA
// container toolkit: its UUID where the driver reported one (GPU-…, MIG-…),
// which no ordering can confuse, else its index.
func VisibleID(g domain.DeviceGrant) string {
	if strings.HasPrefix(g.Device, "GPU-") || strings.HasPrefix(g.Device, "MIG-") {
		return g.Device
	}
	return strconv.Itoa(g.Index)
}
