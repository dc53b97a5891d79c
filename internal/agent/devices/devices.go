package devices

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Discoverer reports the devices of this machine.
type Discoverer interface {
	Devices(ctx context.Context) ([]domain.Device, error)
}

// Fake declares devices that do not exist, as domain.ParseFakeDevices
// reads them: "cuda:4", "cuda.shares:2".
type Fake struct{ Spec string }

// Devices implements Discoverer.
func (f Fake) Devices(context.Context) ([]domain.Device, error) {
	return domain.ParseFakeDevices(f.Spec)
}

// ErrNoDriver is wrapped when NVML cannot be loaded: no NVIDIA driver, or
// a binary built without cgo.
var ErrNoDriver = errors.New("no NVIDIA driver (libnvidia-ml) found")

// NVML reports the machine's NVIDIA GPUs. Slot is the slot they count
// toward: "cuda.device" (whole devices, the default) or "cuda.shares".
type NVML struct{ Slot string }

// Devices implements Discoverer.
func (n NVML) Devices(ctx context.Context) ([]domain.Device, error) {
	slot := n.Slot
	if slot == "" {
		slot = "cuda.device"
	}
	return nvmlDevices(ctx, slot)
}

// For reads the agent's --devices flag: "" or "none" for none, "nvml" (or
// "nvml:cuda.shares") for the machine's GPUs through NVML, "auto" for
// NVML's GPUs where a driver is present and none elsewhere, anything else
// a fake declaration.
func For(spec string) Discoverer {
	switch {
	case spec == "" || spec == "none":
		return Fake{}
	case spec == "auto":
		return auto{}
	case spec == "nvml":
		return NVML{}
	case strings.HasPrefix(spec, "nvml:"):
		return NVML{Slot: strings.TrimPrefix(spec, "nvml:")}
	}
	return Fake{Spec: spec}
}

// auto is NVML where a driver is found and no devices elsewhere.
type auto struct{}

func (auto) Devices(ctx context.Context) ([]domain.Device, error) {
	devs, err := NVML{}.Devices(ctx)
	if errors.Is(err, ErrNoDriver) {
		return nil, nil
	}
	return devs, err
}

// Discover runs the discoverer named by spec, with an error that names
// the flag's value.
func Discover(ctx context.Context, spec string) ([]domain.Device, error) {
	devs, err := For(spec).Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("devices %q: %w", spec, err)
	}
	return devs, nil
}
