package agent

import (
	"fmt"
	"maps"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// withDevices checks the configured devices and makes the capacity of
// their slots what they add up to, which the manager requires.
func withDevices(cfg *Config) error {
	if len(cfg.Devices) == 0 {
		return nil
	}
	if err := domain.ValidateDevices(cfg.Registry, cfg.Devices); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	caps := maps.Clone(cfg.Capacity)
	for i, q := range domain.DeviceCapacity(cfg.Registry, cfg.Devices) {
		if q != 0 {
			id := domain.SlotID(i)
			caps[cfg.Registry.Type(id).Name] = cfg.Registry.Format(id, q)
		}
	}
	cfg.Capacity = caps
	return nil
}

// deviceCapacity lays the device slots' capacity over what a runtime
// reports, which knows nothing of the devices: the manager refuses a
// capacity that differs from what the devices add up to.
func (a *Agent) deviceCapacity(caps map[string]string) map[string]string {
	if len(a.cfg.Devices) == 0 {
		return caps
	}
	out := maps.Clone(caps)
	for i, q := range domain.DeviceCapacity(a.cfg.Registry, a.cfg.Devices) {
		if q != 0 {
			id := domain.SlotID(i)
			out[a.cfg.Registry.Type(id).Name] = a.cfg.Registry.Format(id, q)
		}
	}
	return out
}
