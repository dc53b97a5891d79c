//go:build !(cgo && linux)

package devices

import (
	"context"
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
)

func nvmlDevices(context.Context, string) ([]domain.Device, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo", ErrNoDriver)
}
