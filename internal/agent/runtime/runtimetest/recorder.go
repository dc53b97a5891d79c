package runtimetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Recorder is a Sink that tests can wait on.
type Recorder struct {
	limit time.Duration

	mu      sync.Mutex
	events  []domain.KernelEvent
	changed chan struct{}
}

// NewRecorder returns a recorder whose waits fail the test after limit.
func NewRecorder(limit time.Duration) *Recorder {
	return &Recorder{limit: limit, changed: make(chan struct{})}
}

// Sink is the runtime.Sink to hand a runtime.
func (r *Recorder) Sink(e domain.KernelEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// All returns the events delivered so far, in order.
func (r *Recorder) All() []domain.KernelEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Count counts the events delivered so far that match pred.
func (r *Recorder) Count(pred func(domain.KernelEvent) bool) int {
	n := 0
	for _, e := range r.All() {
		if pred(e) {
			n++
		}
	}
	return n
}

// WaitFor returns the first event matching pred, waiting for it.
func (r *Recorder) WaitFor(t testing.TB, what string, pred func(domain.KernelEvent) bool) domain.KernelEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), r.limit)
	defer cancel()
	var found domain.KernelEvent
	match := func() bool {
		i := slices.IndexFunc(r.events, pred)
		if i >= 0 {
			found = r.events[i]
		}
		return i >= 0
	}
	if runtime.Await(ctx, &r.mu, match, func() <-chan struct{} { return r.changed }) != nil {
		t.Fatalf("no %s event within %v; events: %+v", what, r.limit, r.All())
	}
	return found
}

// Exit waits for the kernel's kernel_terminated event.
func (r *Recorder) Exit(t testing.TB, id domain.KernelID) domain.KernelEvent {
	t.Helper()
	return r.WaitFor(t, "exit of "+string(id), IsExit(id))
}

// IsExit matches the kernel's kernel_terminated events.
func IsExit(id domain.KernelID) func(domain.KernelEvent) bool {
	return func(e domain.KernelEvent) bool { return e.Kind == domain.EventKernelTerminated && e.Kernel == id }
}

// IsStart matches the kernel's kernel_started events.
func IsStart(id domain.KernelID) func(domain.KernelEvent) bool {
	return func(e domain.KernelEvent) bool { return e.Kind == domain.EventKernelStarted && e.Kernel == id }
}

// Eventually polls cond until it holds, failing the test once limit has
// passed.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		<-ticker.C
	}
}

// Code is ev's exit code, or -1 when it carries none, so a test can
// compare it without a nil check of its own.
func Code(ev domain.KernelEvent) int {
	if ev.ExitCode == nil {
		return -1
	}
	return *ev.ExitCode
}
