package runtimetest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Driver calls a runtime as tests do: each call bounded by Wait, an error
// failing the test.
type Driver struct {
	T       testing.TB
	Runtime runtime.Runtime
	Wait    time.Duration
}

func (d Driver) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d.Wait)
}

// Pull pulls image.
func (d Driver) Pull(image string) {
	d.T.Helper()
	ctx, cancel := d.ctx()
	defer cancel()
	if err := d.Runtime.Pull(ctx, image); err != nil {
		d.T.Fatalf("Pull(%q): %v", image, err)
	}
}

// Create creates the kernel, whose image must have been pulled.
func (d Driver) Create(spec runtime.Spec) {
	d.T.Helper()
	ctx, cancel := d.ctx()
	defer cancel()
	if err := d.Runtime.Create(ctx, spec); err != nil {
		d.T.Fatalf("Create(%s): %v", spec.Kernel, err)
	}
}

// Start pulls the kernel's image and creates it.
func (d Driver) Start(spec runtime.Spec) {
	d.T.Helper()
	d.Pull(spec.Image)
	d.Create(spec)
}

// Destroy destroys the kernel. Its failure does not stop the test, so it
// may be called from other goroutines.
func (d Driver) Destroy(id domain.KernelID, grace time.Duration) {
	d.T.Helper()
	ctx, cancel := d.ctx()
	defer cancel()
	if err := d.Runtime.Destroy(ctx, id, grace); err != nil {
		d.T.Errorf("Destroy(%s): %v", id, err)
	}
}

// Logs reads the kernel's whole output.
func (d Driver) Logs(id domain.KernelID) string {
	d.T.Helper()
	rc, err := d.Runtime.Logs(id)
	if err != nil {
		d.T.Fatalf("Logs(%s): %v", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		d.T.Fatalf("read logs of %s: %v", id, err)
	}
	return string(b)
}

// Live returns the kernel's state as Live lists it; ok is false when it is
// not listed.
func (d Driver) Live(id domain.KernelID) (st runtime.KernelState, ok bool) {
	for _, st := range d.Runtime.Live() {
		if st.ID == id {
			return st, true
		}
	}
	return runtime.KernelState{}, false
}
