package api

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeNow is a clock the test moves by hand.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// counting is a computation that returns how many times it has run, and
// blocks while gate is held.
type counting struct {
	calls atomic.Int64
	gate  chan struct{}
	fail  atomic.Bool
	ctxs  chan context.Context
}

func (c *counting) compute(ctx context.Context, group string) (int64, error) {
	n := c.calls.Add(1)
	if c.ctxs != nil {
		c.ctxs <- ctx
	}
	if c.gate != nil {
		<-c.gate
	}
	if c.fail.Load() {
		return 0, errors.New("replay failed")
	}
	return n, nil
}

func newCache(clk *fakeNow, c *counting, ttl, stale time.Duration) *groupCache[int64] {
	return &groupCache[int64]{now: clk.now, ttl: ttl, maxStale: stale, timeout: time.Minute, compute: c.compute}
}

func TestGroupCacheSharesOneComputationAmongConcurrentCallers(t *testing.T) {
	clk := &fakeNow{t: time.Unix(1000, 0)}
	c := &counting{gate: make(chan struct{})}
	gc := newCache(clk, c, time.Second, 0)
	var wg sync.WaitGroup
	got := make([]int64, 10)
	for i := range got {
		wg.Go(func() {
			v, err := gc.get(t.Context(), "g", nil)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	// Let every caller reach the wait before the one run ends.
	for c.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(c.gate)
	wg.Wait()
	if n := c.calls.Load(); n != 1 {
		t.Fatalf("%d computations for 10 concurrent callers, want 1", n)
	}
	for i, v := range got {
		if v != 1 {
			t.Errorf("caller %d got %d, want the shared result 1", i, v)
		}
	}
}

func TestGroupCacheReusesWithinTTLAndRecomputesAfter(t *testing.T) {
	clk := &fakeNow{t: time.Unix(1000, 0)}
	c := &counting{}
	gc := newCache(clk, c, 2*time.Second, 0)
	ctx := t.Context()
	for _, step := range []struct {
		advance time.Duration
		want    int64
	}{
		{0, 1},
		{time.Second, 1},     // 1 s old: fresh
		{time.Second, 2},     // 2 s old: no longer fresh, recomputed
		{time.Second / 2, 2}, // the new one is fresh
	} {
		clk.add(step.advance)
		v, err := gc.get(ctx, "g", nil)
		if err != nil || v != step.want {
			t.Fatalf("after +%v: got %d, %v; want %d", step.advance, v, err, step.want)
		}
	}
	// Groups are cached apart.
	if v, _ := gc.get(ctx, "other", nil); v != 3 {
		t.Fatalf("another group got %d, want its own run (3)", v)
	}
}

func TestGroupCacheNeedRecomputesOnceAndNeverLoops(t *testing.T) {
	clk := &fakeNow{t: time.Unix(1000, 0)}
	c := &counting{}
	gc := newCache(clk, c, time.Hour, 0)
	ctx := t.Context()
	if v, _ := gc.get(ctx, "g", nil); v != 1 {
		t.Fatalf("first run gave %d", v)
	}
	// A caller that needs a newer result (its session is newer than the
	// snapshot) gets a run started after it arrived, even on a frozen clock.
	v, err := gc.get(ctx, "g", func(v int64) bool { return v >= 2 })
	if err != nil || v != 2 {
		t.Fatalf("needing a newer result: got %d, %v; want 2", v, err)
	}
	// A need no result can meet costs one run, not a loop.
	v, err = gc.get(ctx, "g", func(int64) bool { return false })
	if err != nil || v != 3 || c.calls.Load() != 3 {
		t.Fatalf("unmeetable need: got %d, %v after %d runs; want 3 after 3", v, err, c.calls.Load())
	}
}

func TestGroupCacheWaiterGivesUpAloneAndTheRunCompletes(t *testing.T) {
	clk := &fakeNow{t: time.Unix(1000, 0)}
	c := &counting{gate: make(chan struct{}), ctxs: make(chan context.Context, 1)}
	gc := newCache(clk, c, time.Hour, 0)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := gc.get(ctx, "g", nil)
		errc <- err
	}()
	runCtx := <-c.ctxs
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter got %v, want context.Canceled", err)
	}
	if runCtx.Err() != nil {
		t.Fatalf("the shared run was cancelled with its first caller: %v", runCtx.Err())
	}
	if _, ok := runCtx.Deadline(); !ok {
		t.Fatal("the shared run has no deadline of its own")
	}
	close(c.gate)
	if v, err := gc.get(t.Context(), "g", nil); err != nil || v != 1 || c.calls.Load() != 1 {
		t.Fatalf("next caller got %d, %v after %d runs; want the finished run's 1", v, err, c.calls.Load())
	}
}

func TestGroupCacheServesStaleWhileRefreshing(t *testing.T) {
	clk := &fakeNow{t: time.Unix(1000, 0)}
	c := &counting{}
	gc := newCache(clk, c, 5*time.Second, time.Minute)
	ctx := t.Context()
	if v, _ := gc.get(ctx, "g", nil); v != 1 {
		t.Fatalf("first run gave %d", v)
	}
	c.gate = make(chan struct{}) // the refresh will block
	clk.add(10 * time.Second)
	done := make(chan int64)
	go func() {
		v, _ := gc.get(ctx, "g", nil)
		done <- v
	}()
	select {
	case v := <-done:
		if v != 1 {
			t.Fatalf("stale answer %d, want the previous result 1", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a caller within maxStale waited for the refresh")
	}
	close(c.gate)
	// Past maxStale, callers wait for a new run.
	for c.calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	clk.add(2 * time.Minute)
	if v, _ := gc.get(ctx, "g", nil); v != 3 {
		t.Fatalf("past maxStale got %d, want a new run (3)", v)
	}
}

func TestGroupCacheReportsFailureOnceThenRetries(t *testing.T) {
	clk := &fakeNow{t: time.Unix(1000, 0)}
	c := &counting{}
	c.fail.Store(true)
	gc := newCache(clk, c, time.Hour, 0)
	if _, err := gc.get(t.Context(), "g", nil); err == nil {
		t.Fatal("a failed run reported no error")
	}
	c.fail.Store(false)
	if v, err := gc.get(t.Context(), "g", nil); err != nil || v != 2 {
		t.Fatalf("after a failure the next caller got %d, %v; want a new run (2)", v, err)
	}
}
