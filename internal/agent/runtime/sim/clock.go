package sim

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
)

// Clock is the time source a sim runtime runs on.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine, or for ManualClock inside
	// Advance, once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it
	// did.
	Stop() bool
}

// RealClock returns the wall clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ManualClock is a Clock that moves only when told, for tests and for
// simulations that run faster than real time. Its zero value is not usable;
// call NewManualClock.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	timers  timerHeap
	changed chan struct{} // closed and replaced when the timer set changes
}

// NewManualClock returns a clock that reads start until advanced.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for Now()+d. A d of zero or less fires on the next
// Advance, even Advance(0).
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{clock: c, when: c.now.Add(max(d, 0)), seq: c.seq, f: f}
	heap.Push(&c.timers, t)
	c.notifyLocked()
	return t
}

// Advance moves the clock forward by d, calling every timer that falls due
// on the way in time order (ties in the order they were set), each with
// the clock reading its due time. Callbacks run on the caller's goroutine
// without the clock's lock, so they may set or stop timers; one they set
// that falls due within d runs in the same Advance.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(max(d, 0))
	for len(c.timers) > 0 && !c.timers[0].when.After(target) {
		t := heap.Pop(&c.timers).(*manualTimer)
		t.index = -1
		if t.when.After(c.now) {
			c.now = t.when
		}
		c.notifyLocked()
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = target
	c.mu.Unlock()
}

// Pending reports how many timers are set and not yet due or stopped.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next reports when the earliest pending timer falls due; false when none
// is set. A simulation that jumps from event to event advances to it
// instead of stepping through idle time.
func (c *ManualClock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].when, true
}

// WaitTimers blocks until at least n timers are pending or ctx ends. Tests
// use it to know that a call blocked on the clock has set its timer before
// they advance.
func (c *ManualClock) WaitTimers(ctx context.Context, n int) error {
	return c.waitFor(ctx, func() bool { return len(c.timers) >= n })
}

// Scheduled reports how many timers have been set since the clock was
// made, fired and stopped ones included.
func (c *ManualClock) Scheduled() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// WaitScheduled blocks until at least n timers have been set since the
// clock was made, or ctx ends. Where a call replaces one timer by another,
// as a destroy replaces a run, the pending count does not move; this does.
func (c *ManualClock) WaitScheduled(ctx context.Context, n uint64) error {
	return c.waitFor(ctx, func() bool { return c.seq >= n })
}

// waitFor blocks until done, which reads the clock under its lock, holds
// or ctx ends; it looks again each time the clock changes.
func (c *ManualClock) waitFor(ctx context.Context, done func() bool) error {
	return runtime.Await(ctx, &c.mu, done, func() <-chan struct{} { return c.changed })
}

func (c *ManualClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type manualTimer struct {
	clock *ManualClock
	when  time.Time
	seq   uint64
	f     func()
	index int // in the heap; -1 once fired or stopped
}

func (t *manualTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.timers, t.index)
	t.index = -1
	c.notifyLocked()
	return true
}

// timerHeap orders timers by due time, then by the order they were set, so
// a simulation replays identically.
type timerHeap []*manualTimer

func (h timerHeap) Len() int { return len(h) }

func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *timerHeap) Push(x any) {
	t := x.(*manualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
