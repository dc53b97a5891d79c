package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
)

func TestManualClockFiresInOrder(t *testing.T) {
	t.Parallel()
	c := sim.NewManualClock(epoch)
	var fired []string
	at := func(name string) func() {
		return func() { fired = append(fired, name+"@"+c.Now().Sub(epoch).String()) }
	}
	c.AfterFunc(3*time.Second, at("c"))
	c.AfterFunc(time.Second, at("a"))
	c.AfterFunc(time.Second, at("a2")) // a tie fires in the order set
	stopped := c.AfterFunc(2*time.Second, at("never"))
	c.AfterFunc(2*time.Second, func() {
		fired = append(fired, "b@2s")
		// Set from a callback and due within the same Advance.
		c.AfterFunc(500*time.Millisecond, at("nested"))
	})
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	if stopped.Stop() {
		t.Fatal("second Stop reported true")
	}
	if n := c.Pending(); n != 4 {
		t.Fatalf("Pending = %d, want 4", n)
	}

	c.Advance(2500 * time.Millisecond)
	want := []string{"a@1s", "a2@1s", "b@2s", "nested@2.5s"}
	if diff := cmp.Diff(want, fired); diff != "" {
		t.Errorf("fired (-want +got):\n%s", diff)
	}
	if got := c.Now(); !got.Equal(epoch.Add(2500 * time.Millisecond)) {
		t.Errorf("Now = %v after Advance", got)
	}
	c.Advance(time.Second)
	if fired[len(fired)-1] != "c@3s" {
		t.Errorf("last fired %q, want c@3s", fired[len(fired)-1])
	}
	if c.Pending() != 0 || c.Scheduled() != 6 {
		t.Errorf("Pending = %d, Scheduled = %d; want 0 and 6", c.Pending(), c.Scheduled())
	}
}

func TestManualClockWaits(t *testing.T) {
	t.Parallel()
	c := sim.NewManualClock(epoch)
	go c.AfterFunc(time.Second, func() {})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitScheduled(ctx, 1); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancelShort()
	if err := c.WaitTimers(short, 2); err == nil {
		t.Error("WaitTimers(2) returned with one timer set")
	}
	c.AfterFunc(0, func() {})
	c.Advance(0) // a zero-delay timer fires on the next Advance
	if c.Pending() != 1 {
		t.Errorf("Pending = %d, want only the 1s timer", c.Pending())
	}
}

func TestManualClockNext(t *testing.T) {
	t.Parallel()
	c := sim.NewManualClock(epoch)
	if _, ok := c.Next(); ok {
		t.Fatal("Next reported a timer on a fresh clock")
	}
	c.AfterFunc(3*time.Second, func() {})
	early := c.AfterFunc(time.Second, func() {})
	if got, ok := c.Next(); !ok || !got.Equal(epoch.Add(time.Second)) {
		t.Fatalf("Next = %v, %v; want epoch+1s", got, ok)
	}
	early.Stop()
	if got, _ := c.Next(); !got.Equal(epoch.Add(3 * time.Second)) {
		t.Fatalf("Next after Stop = %v, want epoch+3s", got)
	}
}
