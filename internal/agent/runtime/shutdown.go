package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Shutdown is the order a runtime's Close keeps. Pulls and Creates are
// refused first so no kernel starts behind the destroys; the runtime's
// own goroutines stop only after every kernel is gone, since a Destroy may
// be waiting on them to see its kernel exit; the outbox is flushed last so
// the exits the destroys and the stop reported reach the agent.
type Shutdown[K any] struct {
	Images  *Images
	Kernels *Table[K]
	// Destroy ends one kernel with Grace. Its errors are Run's, each
	// prefixed "close: ".
	Destroy func(ctx context.Context, id domain.KernelID, grace time.Duration) error
	Grace   time.Duration
	// Stop ends the runtime's own goroutines; nil when it has none to end.
	Stop func() error
	Out  *Outbox
}

// Run shuts the runtime down, destroying every kernel at once and
// returning the errors joined. A second Run does nothing and returns nil,
// so Close may be called more than once.
func (s Shutdown[K]) Run(ctx context.Context) error {
	s.Images.Close()
	first, err := s.Kernels.CloseAll(ctx, func(ctx context.Context, k *Kernel[K]) error {
		if err := s.Destroy(ctx, k.ID, s.Grace); err != nil {
			return fmt.Errorf("close: %w", err)
		}
		return nil
	})
	if !first {
		return nil
	}
	errs := []error{err}
	if s.Stop != nil {
		errs = append(errs, s.Stop())
	}
	if err := s.Out.Flush(ctx); err != nil {
		errs = append(errs, fmt.Errorf("close: deliver events: %w", err))
	}
	return errors.Join(errs...)
}
