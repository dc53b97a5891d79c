package runtimetest

import (
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
	events  []runtime.Event
	changed chan struct{}
}

// NewRecorder returns a recorder whose waits fail the test after limit.
func NewRecorder(limit time.Duration) *Recorder {
	return &Recorder{limit: limit, changed: make(chan struct{})}
}

// Sink is the runtime.Sink to hand a runtime.
func (r *Recorder) Sink(e runtime.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// All returns the events delivered so far, in order.
func (r *Recorder) All() []runtime.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Count counts the events delivered so far that match pred.
func (r *Recorder) Count(pred func(runtime.Event) bool) int {
	n := 0
	for _, e := range r.All() {
		if pred(e) {
			n++
		}
	}
	return n
}

// WaitFor returns the first event matching pred, waiting for it.
func (r *Recorder) WaitFor(t testing.TB, what string, pred func(runtime.Event) bool) runtime.Event {
	t.Helper()
	deadline := time.NewTimer(r.limit)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for _, e := range r.events {
			if pred(e) {
				r.mu.Unlock()
				return e
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %s event within %v; events: %+v", what, r.limit, r.All())
		}
	}
}

// Exit waits for the kernel's kernel_exited event.
func (r *Recorder) Exit(t testing.TB, id domain.KernelID) runtime.Event {
	t.Helper()
	return r.WaitFor(t, "exit of "+string(id), IsExit(id))
}

// IsExit matches the kernel's kernel_exited events.
func IsExit(id domain.KernelID) func(runtime.Event) bool {
	return func(e runtime.Event) bool { return e.Kind == runtime.KernelExited && e.Kernel == id }
}

// IsStart matches the kernel's kernel_started events.
func IsStart(id domain.KernelID) func(runtime.Event) bool {
	return func(e runtime.Event) bool { return e.Kind == runtime.KernelStarted && e.Kernel == id }
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
