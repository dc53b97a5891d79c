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
