package clock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/clock"
)

func TestManualMovesOnlyWhenTold(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	m := clock.NewManual(t0)
	if got := m.Now(); !got.Equal(t0) {
		t.Fatalf("Now = %v, want %v", got, t0)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { m.Advance(time.Second) })
	}
	wg.Wait()
	if got := m.Now(); !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("after ten concurrent seconds Now = %v", got)
	}
	m.Set(t0)
	if got := m.Now(); !got.Equal(t0) {
		t.Fatalf("after Set Now = %v", got)
	}
}

func TestOrFallsBackToTheWallClock(t *testing.T) {
	if clock.Or(nil) != clock.Wall {
		t.Fatal("Or(nil) is not the wall clock")
	}
	m := clock.NewManual(time.Time{})
	if clock.Or(m) != m {
		t.Fatal("Or(m) is not m")
	}
	before := time.Now()
	if got := clock.Wall.Now(); got.Before(before) {
		t.Fatalf("the wall clock reads %v, before %v", got, before)
	}
}
