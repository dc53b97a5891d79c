package manager_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	"github.com/sokovan-go/sokovan/internal/manager"
)

// fakeClock is a settable clock.
type fakeClock struct{ now atomic.Pointer[time.Time] }

func (c *fakeClock) Now() time.Time  { return *c.now.Load() }
func (c *fakeClock) set(t time.Time) { c.now.Store(&t) }

type fakeLease struct{ held atomic.Bool }

func (l *fakeLease) Held(context.Context) bool { return l.held.Load() }

// samples records what the sampler asked of the store.
type samples struct {
	mu      sync.Mutex
	records []time.Time
	prunes  []time.Time
}

func (s *samples) RecordUtilisation(_ context.Context, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, now)
	return nil
}

func (s *samples) PruneUtilisation(_ context.Context, before time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prunes = append(s.prunes, before)
	return 0, nil
}

func (s *samples) calls() (records, prunes []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.records...), append([]time.Time(nil), s.prunes...)
}

func TestSamplerSample(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		held       bool
		retention  time.Duration
		wantRecord []time.Time
		wantPrune  []time.Time
	}{
		{"not holding the lease does nothing", false, 0, nil, nil},
		// The built-in retention is 7 days: 2025-03-01 12:00 - 168h.
		{"built-in retention", true, 0, []time.Time{t0}, []time.Time{t0.Add(-7 * 24 * time.Hour)}},
		{"configured retention", true, time.Hour, []time.Time{t0}, []time.Time{t0.Add(-time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, lease, clock := &samples{}, &fakeLease{}, &fakeClock{}
			lease.held.Store(tc.held)
			clock.set(t0)
			s := manager.NewSampler(st, lease, clock, nil)
			s.Configure(0, tc.retention)
			if err := s.Sample(t.Context()); err != nil {
				t.Fatal(err)
			}
			records, prunes := st.calls()
			if !equalTimes(records, tc.wantRecord) || !equalTimes(prunes, tc.wantPrune) {
				t.Errorf("records %v prunes %v, want %v and %v", records, prunes, tc.wantRecord, tc.wantPrune)
			}
		})
	}
}

// TestSamplerRun checks the loop samples at the clock's time on every
// tick, follows the lease as it comes and goes, and stops with ctx.
func TestSamplerRun(t *testing.T) {
	t.Parallel()
	st, lease, clock := &samples{}, &fakeLease{}, &fakeClock{}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock.set(t0)
	s := manager.NewSampler(st, lease, clock, nil)
	s.Configure(5*time.Millisecond, 0)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	time.Sleep(30 * time.Millisecond) // several ticks without the lease
	if records, _ := st.calls(); len(records) != 0 {
		t.Fatalf("sampled %d times without the lease", len(records))
	}
	lease.held.Store(true)
	apitest.Eventually(t, 5*time.Second, "two samples", func() bool {
		records, _ := st.calls()
		return len(records) >= 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	records, prunes := st.calls()
	if !records[0].Equal(t0) || len(prunes) < len(records) {
		t.Errorf("records %v prunes %v", records, prunes)
	}
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
