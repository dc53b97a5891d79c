package agentgw

import (
	"errors"
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// checkDevices refuses a registration whose devices are malformed or do
// not add up to its capacity of their slots: placement caps a slot's free
// amount at what the devices can grant, so a capacity larger than the
// devices would be offered and never placed, and a smaller one would let
// the count and the grants drift apart.
func checkDevices(reg *domain.Registry, devs []domain.Device, capacity domain.Vec) error {
	if len(devs) == 0 {
		return nil
	}
	if err := domain.ValidateDevices(reg, devs); err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	want := domain.DeviceCapacity(reg, devs)
	var errs []error
	for i, q := range want {
		if q != 0 && capacity.At(domain.SlotID(i)) != q {
			name := reg.Type(domain.SlotID(i)).Name
			errs = append(errs, fmt.Errorf("capacity of %s is %s, its devices add up to %s", name,
				reg.Format(domain.SlotID(i), capacity.At(domain.SlotID(i))), reg.Format(domain.SlotID(i), q)))
		}
	}
	return errors.Join(errs...)
}
