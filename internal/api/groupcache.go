package api

import (
	"context"
	"sync"
	"time"
)

// groupCache shares one computation per resource group among concurrent
// requests and reuses its result for a while. why, the queue view and the
// start estimate each cost a snapshot of the whole group (and the estimate
// a replay on top); at 100k pending sessions that is a second or more, so
// without sharing, a handful of clients polling `why` would keep a manager
// busy loading the same snapshot over and over.
//
// A computation runs detached from the request that started it, under its
// own deadline: a client that goes away leaves it running for the others,
// and each waiter gives up on its own context alone.
type groupCache[T any] struct {
	now func() time.Time
	// ttl is how long a result is served as fresh. Within maxStale (when
	// longer than ttl) an older result is served at once while a new one
	// is computed in the background; past it, callers wait.
	ttl, maxStale time.Duration
	// timeout bounds one computation.
	timeout time.Duration
	compute func(ctx context.Context, group string) (T, error)

	mu sync.Mutex
	by map[string]*cacheEntry[T]
	// runs numbers computations as they start: "started after the caller
	// arrived" must not depend on a clock, which tests freeze.
	runs uint64
}

type cacheEntry[T any] struct {
	val T
	// at is when the computation that gave val started: val reflects the
	// store no earlier than that.
	at  time.Time
	run uint64
	has bool
	// err is the last computation's failure, of run errRun, started at
	// errAt; it is reported only to callers that arrived before that
	// computation began.
	err    error
	errAt  time.Time
	errRun uint64
	// running is closed when the computation under way ends.
	running chan struct{}
}

// get returns the group's result. need, when set, says whether a result is
// good enough for this caller (the why of a session created a moment ago
// needs a snapshot that holds it); a result that fails it is recomputed
// once, unless it was started after the caller arrived, which is as fresh
// as any could be.
func (c *groupCache[T]) get(ctx context.Context, group string, need func(T) bool) (T, error) {
	var zero T
	c.mu.Lock()
	now, arrived := c.now(), c.runs
	if c.by == nil {
		c.by = map[string]*cacheEntry[T]{}
	}
	e, ok := c.by[group]
	if !ok {
		e = &cacheEntry[T]{}
		c.by[group] = e
	}
	for {
		if e.has {
			// A run that began after the caller arrived is as fresh as
			// any could be, whatever the clock says.
			after := e.run > arrived
			age := now.Sub(e.at)
			good := need == nil || need(e.val)
			switch {
			case good && (after || age < c.ttl):
				v := e.val
				c.mu.Unlock()
				return v, nil
			case good && age < c.maxStale:
				c.start(ctx, group, e)
				v := e.val
				c.mu.Unlock()
				return v, nil
			case !good && after:
				v := e.val
				c.mu.Unlock()
				return v, nil
			}
		}
		if e.err != nil && e.errRun > arrived {
			err := e.err
			c.mu.Unlock()
			return zero, err
		}
		done := c.start(ctx, group, e)
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		c.mu.Lock()
	}
}

// start begins a computation for the group unless one is under way, and
// returns the channel closed when the one under way ends. c.mu is held.
func (c *groupCache[T]) start(ctx context.Context, group string, e *cacheEntry[T]) chan struct{} {
	if e.running != nil {
		return e.running
	}
	done := make(chan struct{})
	e.running = done
	began := c.now()
	c.runs++
	run := c.runs
	// Keep the request's values (logging), not its cancellation.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	go func() {
		defer cancel()
		v, err := c.compute(cctx, group)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			e.err, e.errAt, e.errRun = err, began, run
		} else {
			e.val, e.at, e.run, e.has, e.err = v, began, run, true, nil
		}
		e.running = nil
		close(done)
		c.forgetIdle()
	}()
	return done
}

// forgetIdle drops results nobody asked for in a while, so a manager does
// not keep the snapshot of every group it was once asked about. c.mu is
// held.
func (c *groupCache[T]) forgetIdle() {
	keep := max(c.ttl, c.maxStale) + time.Minute
	now := c.now()
	for g, e := range c.by {
		last := e.at
		if e.errAt.After(last) {
			last = e.errAt
		}
		if e.running == nil && now.Sub(last) > keep {
			delete(c.by, g)
		}
	}
}
