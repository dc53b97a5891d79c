package sim_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/domain"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const waitLimit = 10 * time.Second

type harness struct {
	t     *testing.T
	rt    *sim.Runtime
	clock *sim.ManualClock
	rec   *runtimetest.Recorder
}

func newHarness(t *testing.T, cfg sim.Config) *harness {
	t.Helper()
	h := &harness{t: t, clock: sim.NewManualClock(epoch), rec: runtimetest.NewRecorder(waitLimit)}
	cfg.Clock, cfg.Sink = h.clock, h.rec.Sink
	rt, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// events returns every event delivered so far, after waiting for the
// outbox to drain.
func (h *harness) events() []domain.KernelEvent {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.rt.Close(ctx); err != nil { // Close also flushes
		h.t.Fatal(err)
	}
	return h.rec.All()
}

// async runs fn in a goroutine and hands back its result.
func async(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

func (h *harness) waitTimers(n int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.clock.WaitTimers(ctx, n); err != nil {
		h.t.Fatalf("waiting for %d timers (have %d): %v", n, h.clock.Pending(), err)
	}
}

func result(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLimit):
		t.Fatal("call did not return")
		return nil
	}
}

func pending(ch <-chan error) bool {
	select {
	case err := <-ch:
		panic(fmt.Sprintf("call returned early: %v", err))
	default:
		return true
	}
}

func spec(id string, image string) runtime.Spec {
	return runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: domain.KernelID(id),
		Session: domain.SessionID("s-" + id), Image: image}}
}

// TestConformance runs the suite every runtime passes, on the real clock
// with instant steps.
func TestConformance(t *testing.T) {
	t.Parallel()
	runtimetest.Run(t, runtimetest.DevImages(runtimetest.Kit{
		Open: func(t *testing.T, sink runtime.Sink) runtime.Runtime {
			rt, err := sim.New(sim.Config{Sink: sink})
			if err != nil {
				t.Fatal(err)
			}
			return rt
		},
		Wait: waitLimit,
	}))
}

func TestPullTakesItsDuration(t *testing.T) {
	t.Parallel()
	h := newHarness(t, sim.Config{PullDuration: sim.Fixed(2 * time.Second)})
	done := async(func() error { return h.rt.Pull(context.Background(), "img") })
	h.waitTimers(1)
	// A second caller shares the pull in flight: still one timer.
	second := async(func() error { return h.rt.Pull(context.Background(), "img") })

	h.clock.Advance(2*time.Second - time.Nanosecond)
	pending(done)
	if got := h.rt.Images(); len(got) != 0 {
		t.Fatalf("Images() = %v before the pull finished", got)
	}
	if h.clock.Pending() != 1 {
		t.Fatalf("%d timers pending, want the one pull", h.clock.Pending())
	}
	h.clock.Advance(time.Nanosecond)
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	if err := result(t, second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"img"}, h.rt.Images()); diff != "" {
		t.Errorf("Images (-want +got):\n%s", diff)
	}
	want := []domain.KernelEvent{
		{Kind: domain.EventImagePullStarted, At: epoch, Image: "img"},
		{Kind: domain.EventImagePullFinished, At: epoch.Add(2 * time.Second), Image: "img"},
	}
	if diff := cmp.Diff(want, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestCreateRunExitTimings(t *testing.T) {
	t.Parallel()
	h := newHarness(t, sim.Config{
		CreateDuration: sim.Fixed(3 * time.Second),
		RunDuration:    sim.Fixed(5 * time.Second),
		ExitCodes:      []sim.ExitCode{{Code: 7, Weight: 1}},
	})
	if err := h.rt.Pull(context.Background(), "img"); err != nil {
		t.Fatal(err)
	}
	s := spec("k1", "img")
	done := async(func() error { return h.rt.Create(context.Background(), s) })
	h.waitTimers(1)
	h.clock.Advance(3*time.Second - time.Nanosecond)
	pending(done)
	if got := h.rt.Live(); len(got) != 0 {
		t.Fatalf("Live lists %v while the kernel is being created", got)
	}
	h.clock.Advance(time.Nanosecond)
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	started := epoch.Add(3 * time.Second)
	if diff := cmp.Diff([]runtime.KernelState{{ID: "k1", Session: "s-k1", Image: "img", Running: true, StartedAt: started}}, h.rt.Live()); diff != "" {
		t.Fatalf("Live after create (-want +got):\n%s", diff)
	}

	h.clock.Advance(5*time.Second - time.Nanosecond)
	if st := h.rt.Live()[0]; !st.Running {
		t.Fatalf("exited before its run duration: %+v", st)
	}
	h.clock.Advance(time.Nanosecond)
	code := 7
	finished := started.Add(5 * time.Second)
	wantState := runtime.KernelState{
		ID: "k1", Session: "s-k1", Image: "img", ExitCode: &code,
		Reason: domain.ReasonExited, Message: "exited with code 7", StartedAt: started, FinishedAt: finished,
	}
	if diff := cmp.Diff([]runtime.KernelState{wantState}, h.rt.Live()); diff != "" {
		t.Fatalf("Live after exit (-want +got):\n%s", diff)
	}
	logs, err := h.rt.Logs("k1")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(logs)
	if !strings.Contains(string(text), "started") || !strings.Contains(string(text), "exited with code 7") {
		t.Errorf("logs = %q", text)
	}
	want := []domain.KernelEvent{
		{Kind: domain.EventImagePullStarted, At: epoch, Image: "img"},
		{Kind: domain.EventImagePullFinished, At: epoch, Image: "img"},
		{Kind: domain.EventKernelStarted, At: started, Kernel: "k1", Session: "s-k1"},
		{Kind: domain.EventKernelTerminated, At: finished, Kernel: "k1", Session: "s-k1", ExitCode: &code, Reason: domain.ReasonExited, Message: "exited with code 7"},
	}
	if diff := cmp.Diff(want, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// within checks an observed rate against the configured one. The seed is
// fixed, so the outcome is too; the tolerance only says what "behaves as
// configured" means (for n = 2000, three standard deviations of a
// binomial proportion are at most 0.034).
func within(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 0.035 {
		t.Errorf("%s: observed rate %.3f, configured %.3f", what, got, want)
	}
}

func TestFailureRates(t *testing.T) {
	t.Parallel()
	const n = 2000
	for _, rate := range []float64{0, 0.2, 0.5, 1} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			// Zero durations finish inline, so no clock driving is needed.
			pulls := newHarness(t, sim.Config{Seed: 42, PullFailureRate: rate})
			fails := 0
			for i := range n {
				err := pulls.rt.Pull(ctx, fmt.Sprintf("img-%d", i))
				switch {
				case errors.Is(err, runtime.ErrPullFailed):
					fails++
				case err != nil:
					t.Fatal(err)
				}
			}
			within(t, "pull failures", float64(fails)/n, rate)
			if got := len(pulls.rt.Images()); got != n-fails {
				t.Errorf("Images lists %d, want the %d that pulled", got, n-fails)
			}

			creates := newHarness(t, sim.Config{Seed: 42, CreateFailureRate: rate})
			if err := creates.rt.Pull(ctx, "img"); err != nil {
				t.Fatal(err)
			}
			fails = 0
			for i := range n {
				err := creates.rt.Create(ctx, spec(fmt.Sprintf("k%d", i), "img"))
				switch {
				case errors.Is(err, runtime.ErrCreateFailed):
					fails++
				case err != nil:
					t.Fatal(err)
				}
			}
			within(t, "create failures", float64(fails)/n, rate)
			if got := len(creates.rt.Live()); got != n-fails {
				t.Errorf("Live lists %d kernels, want the %d that started", got, n-fails)
			}
		})
	}
}

func TestExitCodeDistribution(t *testing.T) {
	t.Parallel()
	const n = 2000
	h := newHarness(t, sim.Config{
		Seed:        7,
		RunDuration: sim.Fixed(time.Second),
		ExitCodes:   []sim.ExitCode{{Code: 0, Weight: 3}, {Code: 1, Weight: 1}, {Code: 137, Weight: 0}},
	})
	if err := h.rt.Pull(context.Background(), "img"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := h.rt.Create(context.Background(), spec(fmt.Sprintf("k%d", i), "img")); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(time.Second)
	counts := map[int]int{}
	for _, st := range h.rt.Live() {
		if st.ExitCode == nil {
			t.Fatalf("kernel %s still running after its run duration", st.ID)
		}
		counts[*st.ExitCode]++
	}
	within(t, "exit code 1", float64(counts[1])/n, 0.25)
	if counts[0]+counts[1] != n {
		t.Errorf("codes drawn: %v, want only 0 and 1 (137 has weight 0)", counts)
	}
}

// scenario drives a runtime through pulls, creations, runs and destroys,
// issuing calls one at a time so the draws happen in a fixed order.
func scenario(t *testing.T, seed uint64) []domain.KernelEvent {
	h := newHarness(t, sim.Config{
		Seed:              seed,
		PullDuration:      sim.Range{Min: time.Second, Max: 5 * time.Second},
		CreateDuration:    sim.Range{Min: 100 * time.Millisecond, Max: 2 * time.Second},
		RunDuration:       sim.Range{Min: 5 * time.Second, Max: time.Minute},
		DestroyDuration:   sim.Range{Min: 500 * time.Millisecond, Max: 3 * time.Second},
		PullFailureRate:   0.3,
		CreateFailureRate: 0.2,
		ExitCodes:         []sim.ExitCode{{Code: 0, Weight: 2}, {Code: 1, Weight: 1}, {Code: 2, Weight: 1}},
	})
	var pulls []<-chan error
	for i := range 8 {
		image := fmt.Sprintf("img-%d", i)
		pulls = append(pulls, async(func() error { return h.rt.Pull(context.Background(), image) }))
		h.waitTimers(i + 1)
	}
	h.clock.Advance(10 * time.Second)
	var images []string
	for i, ch := range pulls {
		if err := result(t, ch); err == nil {
			images = append(images, fmt.Sprintf("img-%d", i))
		}
	}
	var creates []<-chan error
	var ids []domain.KernelID
	for i := range 30 {
		s := spec(fmt.Sprintf("k%02d", i), images[i%len(images)])
		ids = append(ids, s.Kernel)
		creates = append(creates, async(func() error { return h.rt.Create(context.Background(), s) }))
		h.waitTimers(i + 1)
	}
	h.clock.Advance(5 * time.Second)
	for _, ch := range creates {
		result(t, ch) // failures are part of the replay
	}
	h.clock.Advance(20 * time.Second) // some exit on their own
	for i, id := range ids {
		running := false
		for _, st := range h.rt.Live() {
			running = running || st.ID == id && st.Running
		}
		grace := 2 * time.Second
		if i%3 == 0 {
			grace = 0 // killed at once
		}
		set := h.clock.Scheduled()
		done := async(func() error { return h.rt.Destroy(context.Background(), id, grace) })
		if running && grace > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			err := h.clock.WaitScheduled(ctx, set+1)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			h.clock.Advance(4 * time.Second)
		}
		if err := result(t, done); err != nil {
			t.Fatal(err)
		}
	}
	return h.events()
}

func TestSameSeedSameEvents(t *testing.T) {
	t.Parallel()
	a, b, c := scenario(t, 1234), scenario(t, 1234), scenario(t, 99)
	if len(a) < 60 {
		t.Fatalf("scenario produced only %d events", len(a))
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different events (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Error("a different seed replayed the same events")
	}
	kinds := map[domain.EventKind]int{}
	reasons := map[domain.ExitReason]int{}
	for _, e := range a {
		kinds[e.Kind]++
		reasons[e.Reason]++
	}
	// The scenario exercises every path it is meant to replay.
	for _, k := range []domain.EventKind{domain.EventImagePullFinished, domain.EventImagePullFailed, domain.EventKernelStarted, domain.EventKernelTerminated} {
		if kinds[k] == 0 {
			t.Errorf("scenario has no %s event: %v", k, kinds)
		}
	}
	if reasons[domain.ReasonExited] == 0 || reasons[domain.ReasonDestroyed] == 0 {
		t.Errorf("scenario reasons %v, want exits and destroys", reasons)
	}
}

func TestDestroyGrace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		grace    time.Duration
		wantAt   time.Duration
		wantCode int
	}{
		{"stops within the grace", 10 * time.Second, 2 * time.Second, 143},
		{"killed at the grace", time.Second, time.Second, 137},
		{"no grace", 0, 0, 137},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, sim.Config{DestroyDuration: sim.Fixed(2 * time.Second)})
			if err := h.rt.Pull(context.Background(), "sleep"); err != nil {
				t.Fatal(err)
			}
			if err := h.rt.Create(context.Background(), spec("k", "sleep")); err != nil {
				t.Fatal(err)
			}
			done := async(func() error { return h.rt.Destroy(context.Background(), "k", tc.grace) })
			if tc.wantAt > 0 {
				h.waitTimers(1)
				h.clock.Advance(tc.wantAt - time.Nanosecond)
				pending(done)
				h.clock.Advance(time.Nanosecond)
			}
			if err := result(t, done); err != nil {
				t.Fatal(err)
			}
			if got := h.rt.Live(); len(got) != 0 {
				t.Errorf("Live = %v after Destroy", got)
			}
			if _, err := h.rt.Logs("k"); !errors.Is(err, runtime.ErrNotFound) {
				t.Errorf("Logs after Destroy = %v, want ErrNotFound", err)
			}
			ev := h.events()
			last := ev[len(ev)-1]
			if last.Kind != domain.EventKernelTerminated || last.Reason != domain.ReasonDestroyed || runtimetest.Code(last) != tc.wantCode || !last.At.Equal(epoch.Add(tc.wantAt)) {
				t.Errorf("last event = %+v, want destroyed with %d at +%v", last, tc.wantCode, tc.wantAt)
			}
		})
	}
}

func TestDestroyIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, sim.Config{RunDuration: sim.Fixed(time.Second)})
	ctx := context.Background()
	if err := h.rt.Pull(ctx, "img"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := h.rt.Create(ctx, spec(id, "img")); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(time.Second) // both exit
	for _, id := range []domain.KernelID{"a", "a", "b", "never"} {
		if err := h.rt.Destroy(ctx, id, time.Second); err != nil {
			t.Errorf("Destroy(%s): %v", id, err)
		}
	}
	exits := 0
	for _, e := range h.events() {
		if e.Kind == domain.EventKernelTerminated {
			exits++
			if e.Reason != domain.ReasonExited {
				t.Errorf("exited kernel reported again as %s", e.Reason)
			}
		}
	}
	if exits != 2 {
		t.Errorf("%d exit events, want 2", exits)
	}
}

func TestCreateIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, sim.Config{CreateDuration: sim.Fixed(time.Second)})
	ctx := context.Background()
	if err := h.rt.Create(ctx, spec("k", "img")); !errors.Is(err, runtime.ErrImageNotPulled) {
		t.Fatalf("Create before Pull = %v, want ErrImageNotPulled", err)
	}
	if err := h.rt.Pull(ctx, "img"); err != nil {
		t.Fatal(err)
	}
	first := async(func() error { return h.rt.Create(ctx, spec("k", "img")) })
	h.waitTimers(1)
	second := async(func() error { return h.rt.Create(ctx, spec("k", "img")) })
	h.clock.Advance(time.Second)
	for _, ch := range []<-chan error{first, second} {
		if err := result(t, ch); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.rt.Create(ctx, spec("k", "img")); err != nil {
		t.Fatal(err)
	}
	if n := len(h.rt.Live()); n != 1 {
		t.Errorf("Live lists %d kernels, want 1", n)
	}
	starts := 0
	for _, e := range h.events() {
		if e.Kind == domain.EventKernelStarted {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("%d kernel_started events, want 1", starts)
	}
}

func TestCreateCancelledAbandons(t *testing.T) {
	t.Parallel()
	h := newHarness(t, sim.Config{CreateDuration: sim.Fixed(time.Hour)})
	if err := h.rt.Pull(context.Background(), "img"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := async(func() error { return h.rt.Create(ctx, spec("k", "img")) })
	h.waitTimers(1)
	cancel()
	if err := result(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Create = %v, want context.Canceled", err)
	}
	if n := h.clock.Pending(); n != 0 {
		t.Errorf("%d timers left after the creation was abandoned", n)
	}
	h.clock.Advance(2 * time.Hour)
	if got := h.rt.Live(); len(got) != 0 {
		t.Errorf("Live = %v, want the abandoned kernel gone", got)
	}
}

func TestDevModeImages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, sim.Config{
		KnownImages: []string{"sleep", "exit:N", "http-echo"},
		RunDuration: sim.Fixed(time.Second),
	})
	ctx := context.Background()
	err := h.rt.Pull(ctx, "foo")
	if !errors.Is(err, runtime.ErrUnknownImage) || err.Error() != `image "foo" is not in the catalog (known: exit:N, http-echo, sleep)` {
		t.Errorf("Pull(foo) = %v", err)
	}
	if err := h.rt.Pull(ctx, "exit:300"); !errors.Is(err, runtime.ErrUnknownImage) {
		t.Errorf("Pull(exit:300) = %v, want ErrUnknownImage", err)
	}
	for _, image := range []string{"sleep", "exit:3", "http-echo"} {
		if err := h.rt.Pull(ctx, image); err != nil {
			t.Fatal(err)
		}
	}
	sleeper, exiter, other := spec("sleeper", "sleep"), spec("exiter", "exit:3"), spec("other", "http-echo")
	exiter.Env = map[string]string{"SOKOVAN_EXIT_AFTER": "0.5"}
	for _, s := range []runtime.Spec{sleeper, exiter, other} {
		if err := h.rt.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(500 * time.Millisecond)
	states := map[domain.KernelID]runtime.KernelState{}
	for _, st := range h.rt.Live() {
		states[st.ID] = st
	}
	if st := states["exiter"]; st.ExitCode == nil || *st.ExitCode != 3 || !st.FinishedAt.Equal(epoch.Add(500*time.Millisecond)) {
		t.Errorf("exit:3 = %+v, want code 3 after SOKOVAN_EXIT_AFTER", st)
	}
	if !states["other"].Running {
		t.Error("http-echo exited before RunDuration")
	}
	h.clock.Advance(time.Hour)
	for _, st := range h.rt.Live() {
		switch st.ID {
		case "sleeper":
			if !st.Running {
				t.Errorf("sleep exited on its own: %+v", st)
			}
		case "other":
			if st.Running {
				t.Errorf("http-echo ran past RunDuration: %+v", st)
			}
		}
	}
}

func TestCloseEndsEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, sim.Config{PullDuration: sim.Fixed(time.Minute), CreateDuration: sim.Fixed(time.Minute)})
	ctx := context.Background()
	pullDone := async(func() error { return h.rt.Pull(ctx, "a") })
	h.waitTimers(1)
	h.clock.Advance(time.Minute)
	if err := result(t, pullDone); err != nil {
		t.Fatal(err)
	}
	running := async(func() error { return h.rt.Create(ctx, spec("run", "a")) })
	h.waitTimers(1)
	h.clock.Advance(time.Minute)
	if err := result(t, running); err != nil {
		t.Fatal(err)
	}
	slowPull := async(func() error { return h.rt.Pull(ctx, "b") })
	h.waitTimers(1)
	slowCreate := async(func() error { return h.rt.Create(ctx, spec("slow", "a")) })
	h.waitTimers(2)

	events := h.events() // closes
	if err := result(t, slowPull); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("pull in flight at Close = %v, want ErrClosed", err)
	}
	if err := result(t, slowCreate); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("create in flight at Close = %v, want ErrClosed", err)
	}
	last := events[len(events)-1]
	if last.Kind != domain.EventKernelTerminated || last.Kernel != "run" || last.Reason != domain.ReasonDestroyed {
		t.Errorf("last event = %+v, want the running kernel destroyed", last)
	}
	if n := h.clock.Pending(); n != 0 {
		t.Errorf("%d timers left after Close", n)
	}
	if err := h.rt.Pull(ctx, "a"); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Pull after Close = %v", err)
	}
	if err := h.rt.Create(ctx, spec("late", "a")); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Create after Close = %v", err)
	}
}

func TestHundredsOfRuntimesAreCheap(t *testing.T) {
	// Not parallel: it counts goroutines.
	const runtimes, kernels = 300, 20
	clock := sim.NewManualClock(epoch)
	before := goruntime.NumGoroutine()
	var sinkMu sync.Mutex
	exits := 0
	rts := make([]*sim.Runtime, runtimes)
	ctx := context.Background()
	for i := range rts {
		rt, err := sim.New(sim.Config{
			Seed: uint64(i), Clock: clock, RunDuration: sim.Range{Min: time.Second, Max: time.Hour},
			Sink: func(e domain.KernelEvent) {
				if e.Kind == domain.EventKernelTerminated {
					sinkMu.Lock()
					exits++
					sinkMu.Unlock()
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		rts[i] = rt
		if err := rt.Pull(ctx, "img"); err != nil {
			t.Fatal(err)
		}
		for k := range kernels {
			if err := rt.Create(ctx, spec(fmt.Sprintf("k%d", k), "img")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := clock.Pending(); n != runtimes*kernels {
		t.Fatalf("%d timers pending, want one per kernel (%d)", n, runtimes*kernels)
	}
	clock.Advance(30 * time.Minute)
	// Draining the outboxes leaves no goroutine behind: idle runtimes own
	// none, and no kernel ever had one.
	for _, rt := range rts {
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if after := goruntime.NumGoroutine(); after > before+2 {
		t.Errorf("%d goroutines after %d runtimes with %d kernels each, %d before", after, runtimes, kernels, before)
	}
	sinkMu.Lock()
	defer sinkMu.Unlock()
	if exits != runtimes*kernels {
		t.Errorf("%d exits delivered, want %d", exits, runtimes*kernels)
	}
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	rt, err := sim.New(sim.Config{PullDuration: sim.Fixed(5 * time.Millisecond), CreateDuration: sim.Fixed(5 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := rt.Pull(ctx, "img"); err != nil {
		t.Fatal(err)
	}
	if err := rt.Create(ctx, spec("k", "img")); err != nil {
		t.Fatal(err)
	}
	if live := rt.Live(); len(live) != 1 || !live[0].Running {
		t.Errorf("Live = %+v", live)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  sim.Config
	}{
		{"negative duration", sim.Config{PullDuration: sim.Fixed(-time.Second)}},
		{"inverted range", sim.Config{RunDuration: sim.Range{Min: 2 * time.Second, Max: time.Second}}},
		{"rate above one", sim.Config{PullFailureRate: 1.5}},
		{"NaN rate", sim.Config{CreateFailureRate: math.NaN()}},
		{"exit code out of range", sim.Config{ExitCodes: []sim.ExitCode{{Code: 256, Weight: 1}}}},
		{"zero weights", sim.Config{ExitCodes: []sim.ExitCode{{Code: 1}}}},
	}
	for _, tc := range tests {
		if _, err := sim.New(tc.cfg); err == nil {
			t.Errorf("%s: New accepted %+v", tc.name, tc.cfg)
		}
	}
}
