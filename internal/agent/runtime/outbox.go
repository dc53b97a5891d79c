package runtime

import (
	"context"
	"sync"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Outbox delivers events to a Sink in the order they were emitted, without
// ever making the emitter wait for the sink.
//
// The choice: events queue in memory without a bound, and a delivery
// goroutine exists only while the queue is non-empty. A slow sink therefore
// delays delivery but never blocks a kernel's exit bookkeeping, a Destroy or
// a timer callback, and no event is dropped: exits release resources on the
// manager, so losing one is worse than holding a few hundred bytes per
// kernel until the sink catches up. An idle outbox holds no goroutine, which
// keeps hundreds of simulated agents in one process cheap.
type Outbox struct {
	sink Sink

	mu      sync.Mutex
	queue   []domain.KernelEvent
	running bool
	// drained is closed when the current delivery goroutine exits.
	drained chan struct{}
}

// NewOutbox returns an outbox for sink; a nil sink discards every event.
func NewOutbox(sink Sink) *Outbox { return &Outbox{sink: sink} }

// Emit queues e and returns at once.
func (o *Outbox) Emit(e domain.KernelEvent) {
	if o.sink == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queue = append(o.queue, e)
	if !o.running {
		o.running = true
		o.drained = make(chan struct{})
		go o.deliver(o.drained)
	}
}

// deliver hands queued events to the sink until the queue is empty, then
// exits; the next Emit starts a new one. Only one runs at a time, which is
// what keeps the order.
func (o *Outbox) deliver(drained chan struct{}) {
	defer close(drained)
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			o.running = false
			o.queue = nil // let a burst's backing array go
			o.mu.Unlock()
			return
		}
		e := o.queue[0]
		o.queue[0] = domain.KernelEvent{}
		o.queue = o.queue[1:]
		o.mu.Unlock()
		o.sink(e)
	}
}

// Flush waits until every event emitted before the call has been handed to
// the sink and the delivery goroutine has exited, or ctx ends.
func (o *Outbox) Flush(ctx context.Context) error {
	return Await(ctx, &o.mu, func() bool { return !o.running }, func() <-chan struct{} { return o.drained })
}

// Await blocks until done holds or ctx ends. done and changed are called
// with mu held; changed gives a channel that is closed at the next change
// done could see, after which done is asked again.
func Await(ctx context.Context, mu sync.Locker, done func() bool, changed func() <-chan struct{}) error {
	for {
		mu.Lock()
		if done() {
			mu.Unlock()
			return nil
		}
		ch := changed()
		mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
