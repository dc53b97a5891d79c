package runtimetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Kit is what Run needs to know of a runtime.
type Kit struct {
	// Open returns a new runtime that reports to sink. Run closes it; Open
	// may register checks of its own for after (t.Cleanup), and Close may
	// be called again there.
	Open func(t *testing.T, sink runtime.Sink) runtime.Runtime
	// Sleep names an image whose kernels run until destroyed. Exit names
	// one whose kernels exit on their own soon after they start, with
	// ExitCode.
	Sleep, Exit string
	ExitCode    int
	// Env is added to every kernel's spec.
	Env map[string]string
	// Wait bounds every wait; zero means 15s.
	Wait time.Duration
}

// DevImages returns kit with the images the process and sim runtimes both
// run as dev mode defines them: sleep, and exit:3 at once.
func DevImages(kit Kit) Kit {
	kit.Sleep, kit.Exit, kit.ExitCode = "sleep", "exit:3", 3
	kit.Env = map[string]string{"SOKOVAN_EXIT_AFTER": "0"}
	return kit
}

// Run runs the conformance suite against the runtime kit opens, each case
// on a runtime of its own, in parallel.
func Run(t *testing.T, kit Kit) {
	if kit.Wait == 0 {
		kit.Wait = 15 * time.Second
	}
	cases := []struct {
		name string
		run  func(*subject)
	}{
		{"create once", createOnce},
		{"concurrent first creates start one kernel", concurrentCreate},
		{"destroy of unknown, at once and twice", destroyIdempotent},
		{"live is sorted by id", liveSorted},
		{"exit recorded and reported once", exitOnce},
		{"close ends kernels and refuses more", closeEnds},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := NewRecorder(kit.Wait)
			s := &subject{t: t, kit: kit, rec: rec, prefix: RandomHex(t, 3)}
			s.rt = kit.Open(t, rec.Sink)
			s.Driver = Driver{T: t, Runtime: s.rt, Wait: kit.Wait}
			t.Cleanup(func() { s.close() })
			tc.run(s)
		})
	}
}

// subject is one case's runtime with its recorder.
type subject struct {
	Driver
	t      *testing.T
	kit    Kit
	rt     runtime.Runtime
	rec    *Recorder
	prefix string // keeps kernel ids apart across cases and -count runs

	mu sync.Mutex
	n  int
}

// RandomHex returns n random bytes in hex, for names that must not clash
// across tests and runs.
func RandomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// spec returns a spec for image with a fresh kernel id that starts with
// name.
func (s *subject) spec(name, image string) runtime.Spec {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	id := domain.KernelID(fmt.Sprintf("%s-%s-%d", name, s.prefix, s.n))
	return runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: id, Session: "sess-" + domain.SessionID(id),
		Image: image, Env: maps.Clone(s.kit.Env)}}
}

// close closes the runtime, which delivers every event: counts taken after
// it are final.
func (s *subject) close() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*s.kit.Wait)
	defer cancel()
	if err := s.rt.Close(ctx); err != nil {
		s.t.Errorf("Close: %v", err)
	}
}

// once checks that exactly one event of what matched pred.
func (s *subject) once(what string, pred func(domain.KernelEvent) bool) {
	s.t.Helper()
	if n := s.rec.Count(pred); n != 1 {
		s.t.Errorf("%d %s events, want 1; events: %+v", n, what, s.rec.All())
	}
}

// createOnce: a second Create of a running or an exited kernel starts
// nothing and succeeds.
func createOnce(s *subject) {
	run := s.spec("run", s.kit.Sleep)
	s.Start(run)
	for range 3 {
		s.Create(run)
	}
	if st, ok := s.Live(run.Kernel); !ok || !st.Running {
		s.t.Errorf("Live has %+v (listed %v), want the kernel running", st, ok)
	}

	done := s.spec("done", s.kit.Exit)
	s.Start(done)
	s.rec.Exit(s.t, done.Kernel)
	s.Create(done)
	if st, ok := s.Live(done.Kernel); !ok || st.Running || st.ExitCode == nil || *st.ExitCode != s.kit.ExitCode {
		s.t.Errorf("Live has %+v (listed %v), want the kernel exited with %d", st, ok, s.kit.ExitCode)
	}
	if n := len(s.rt.Live()); n != 2 {
		s.t.Errorf("Live lists %d kernels, want 2", n)
	}

	s.close()
	s.once("kernel_started of the running kernel", IsStart(run.Kernel))
	s.once("kernel_started of the exited kernel", IsStart(done.Kernel))
	s.once("kernel_terminated of the exited kernel", IsExit(done.Kernel))
}

// concurrentCreate: Creates of one new id that race start it once; every
// one of them succeeds.
func concurrentCreate(s *subject) {
	spec := s.spec("race", s.kit.Sleep)
	s.Pull(spec.Image)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.kit.Wait)
			defer cancel()
			if err := s.rt.Create(ctx, spec); err != nil {
				s.t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
	if n := len(s.rt.Live()); n != 1 {
		s.t.Errorf("Live lists %d kernels, want 1", n)
	}
	s.close()
	s.once("kernel_started", IsStart(spec.Kernel))
}

// destroyIdempotent: Destroy of an id never created succeeds (and it has
// no logs), and Destroys of one kernel, at once and after, end it once.
func destroyIdempotent(s *subject) {
	unknown := "never-created-" + domain.KernelID(s.prefix)
	s.Destroy(unknown, time.Second)
	if _, err := s.rt.Logs(unknown); !errors.Is(err, runtime.ErrNotFound) {
		s.t.Errorf("Logs of an unknown kernel = %v, want ErrNotFound", err)
	}

	spec := s.spec("victim", s.kit.Sleep)
	s.Start(spec)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { s.Destroy(spec.Kernel, time.Second) })
	}
	wg.Wait()
	s.Destroy(spec.Kernel, time.Second)
	if _, ok := s.Live(spec.Kernel); ok {
		s.t.Errorf("destroyed kernel still listed")
	}
	ev := s.rec.Exit(s.t, spec.Kernel)
	if ev.Reason != domain.ReasonDestroyed {
		s.t.Errorf("exit event = %+v, want reason %q", ev, domain.ReasonDestroyed)
	}
	s.close()
	s.once("kernel_terminated", IsExit(spec.Kernel))
}

// liveSorted: Live lists by id whatever the order of creation.
func liveSorted(s *subject) {
	s.Pull(s.kit.Sleep)
	var want []domain.KernelID
	for _, name := range []string{"c", "a", "b"} {
		spec := s.spec(name, s.kit.Sleep)
		s.Create(spec)
		want = append(want, spec.Kernel)
	}
	slices.Sort(want)
	var got []domain.KernelID
	for _, st := range s.rt.Live() {
		got = append(got, st.ID)
	}
	if !slices.Equal(got, want) {
		s.t.Errorf("Live ids = %v, want %v", got, want)
	}
}

// exitOnce: a kernel that exits on its own is reported once, with its
// code, stays listed with it until destroyed, and a Destroy then reports
// nothing more.
func exitOnce(s *subject) {
	spec := s.spec("exits", s.kit.Exit)
	s.Start(spec)
	ev := s.rec.Exit(s.t, spec.Kernel)
	if ev.ExitCode == nil || *ev.ExitCode != s.kit.ExitCode || ev.Reason != domain.ReasonExited || ev.Session != spec.Session {
		s.t.Errorf("exit event = %+v, want code %d, reason %q, session %s", ev, s.kit.ExitCode, domain.ReasonExited, spec.Session)
	}
	st, ok := s.Live(spec.Kernel)
	switch {
	case !ok:
		s.t.Errorf("exited kernel not listed by Live")
	case st.Running || st.ExitCode == nil || *st.ExitCode != s.kit.ExitCode || st.Reason != domain.ReasonExited:
		s.t.Errorf("Live has %+v, want exited with %d", st, s.kit.ExitCode)
	case st.FinishedAt.Before(st.StartedAt):
		s.t.Errorf("finished at %v, before it started at %v", st.FinishedAt, st.StartedAt)
	}
	// Live hands out copies.
	if ok && st.ExitCode != nil {
		*st.ExitCode = -100
		if again, _ := s.Live(spec.Kernel); again.ExitCode == nil || *again.ExitCode != s.kit.ExitCode {
			s.t.Errorf("writing through Live's ExitCode changed the runtime's state")
		}
	}
	s.Destroy(spec.Kernel, time.Second)
	s.Destroy(spec.Kernel, time.Second)
	if _, ok := s.Live(spec.Kernel); ok {
		s.t.Errorf("exited kernel still listed after Destroy")
	}
	s.close()
	s.once("kernel_terminated", IsExit(spec.Kernel))
}

// closeEnds: Close destroys every kernel and reports it, after which Pull
// and Create fail with ErrClosed and Close succeeds again.
func closeEnds(s *subject) {
	spec := s.spec("left", s.kit.Sleep)
	s.Start(spec)
	s.close()
	s.once("kernel_terminated", IsExit(spec.Kernel))
	if ev := s.rec.Exit(s.t, spec.Kernel); ev.Reason != domain.ReasonDestroyed {
		s.t.Errorf("exit event = %+v, want reason %q", ev, domain.ReasonDestroyed)
	}
	if live := s.rt.Live(); len(live) != 0 {
		s.t.Errorf("Live after Close = %+v, want none", live)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.kit.Wait)
	defer cancel()
	if err := s.rt.Pull(ctx, s.kit.Sleep); !errors.Is(err, runtime.ErrClosed) {
		s.t.Errorf("Pull after Close = %v, want ErrClosed", err)
	}
	if err := s.rt.Create(ctx, s.spec("late", s.kit.Sleep)); !errors.Is(err, runtime.ErrClosed) {
		s.t.Errorf("Create after Close = %v, want ErrClosed", err)
	}
	s.close()
}
