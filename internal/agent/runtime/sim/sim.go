package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Range is a duration drawn uniformly from [Min, Max]. Max zero means
// exactly Min.
type Range struct {
	Min, Max time.Duration
}

// Fixed is a Range that always gives d.
func Fixed(d time.Duration) Range { return Range{Min: d} }

func (r Range) draw(rng *rand.Rand) time.Duration {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)+1))
}

func (r Range) zero() bool { return r.Min == 0 && r.Max == 0 }

func (r Range) validate(name string) error {
	if r.Min < 0 || r.Max < 0 || r.Max != 0 && r.Max < r.Min {
		return fmt.Errorf("sim runtime: %s range [%v, %v] is not a range of non-negative durations", name, r.Min, r.Max)
	}
	return nil
}

// ExitCode is one outcome of the exit code distribution, with its weight.
type ExitCode struct {
	Code   int
	Weight float64
}

// Config configures a sim runtime. Every random draw comes from one
// generator seeded by Seed, in the order calls reach the runtime, so the
// same seed and the same calls give the same events.
type Config struct {
	Seed uint64
	// Clock drives every duration; nil means RealClock.
	Clock Clock
	// Sink receives events; nil discards them.
	Sink runtime.Sink
	// KnownImages lists the images Pull accepts; "exit:N" admits every
	// exit:0 to exit:255. Empty accepts any name.
	KnownImages []string
	// PullDuration, CreateDuration and DestroyDuration are how long each
	// step takes. A destroy longer than Destroy's grace is cut short at
	// the grace, as a SIGKILL would.
	PullDuration, CreateDuration, DestroyDuration Range
	// RunDuration is how long a kernel runs before it exits on its own;
	// zero means until destroyed. The images "sleep" (until destroyed) and
	// "exit:N" (code N after SOKOVAN_EXIT_AFTER seconds, default 1) behave
	// as in the process runtime whatever this says, so sessions written
	// for dev mode act alike here.
	RunDuration Range
	// PullFailureRate and CreateFailureRate are probabilities in [0, 1].
	PullFailureRate, CreateFailureRate float64
	// ExitCodes is the distribution of codes for kernels that end on their
	// own; empty means always 0.
	ExitCodes []ExitCode
}

func (c Config) validate() error {
	ranges := []struct {
		name string
		r    Range
	}{{"pull", c.PullDuration}, {"create", c.CreateDuration}, {"run", c.RunDuration}, {"destroy", c.DestroyDuration}}
	for _, x := range ranges {
		if err := x.r.validate(x.name); err != nil {
			return err
		}
	}
	rates := []struct {
		name string
		p    float64
	}{{"pull", c.PullFailureRate}, {"create", c.CreateFailureRate}}
	for _, x := range rates {
		if !(x.p >= 0 && x.p <= 1) { // also refuses NaN
			return fmt.Errorf("sim runtime: %s failure rate %v is not in [0, 1]", x.name, x.p)
		}
	}
	total := 0.0
	for _, e := range c.ExitCodes {
		if e.Code < 0 || e.Code > 255 || !(e.Weight >= 0) {
			return fmt.Errorf("sim runtime: exit code %d with weight %v: codes are 0-255, weights non-negative", e.Code, e.Weight)
		}
		total += e.Weight
	}
	if len(c.ExitCodes) > 0 && total == 0 {
		return errors.New("sim runtime: exit code weights sum to zero")
	}
	return nil
}

var _ runtime.Runtime = (*Runtime)(nil)

// Runtime simulates kernels with timers. It starts no goroutine of its own
// except its Outbox's delivery goroutine, which exists only while events
// are queued, so an idle runtime costs only its memory.
type Runtime struct {
	cfg   Config
	clock Clock
	out   *runtime.Outbox

	mu      sync.Mutex
	rng     *rand.Rand
	closed  bool
	pulled  map[string]bool
	pulls   map[string]*pull
	kernels map[domain.KernelID]*kernel
}

type pull struct {
	done  chan struct{}
	err   error
	timer Timer
}

type phase uint8

const (
	creating phase = iota
	running
	exited
)

type kernel struct {
	spec     runtime.Spec
	phase    phase
	started  chan struct{} // closed when creation ends, either way
	startErr error
	done     chan struct{} // closed on exit
	timer    Timer         // the pending create, run or destroy step
	// destroying: a Destroy is waiting for the stop to finish.
	destroying bool
	state      runtime.KernelState
	log        []string
}

// New returns a sim runtime.
func New(cfg Config) (*Runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	clock := cfg.Clock
	if clock == nil {
		clock = RealClock()
	}
	return &Runtime{
		cfg:   cfg,
		clock: clock,
		out:   runtime.NewOutbox(cfg.Sink),
		// The second PCG word is fixed: one seed is all a replay needs.
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x736f6b6f76616e)),
		pulled:  make(map[string]bool),
		pulls:   make(map[string]*pull),
		kernels: make(map[domain.KernelID]*kernel),
	}, nil
}

// known checks an image against KnownImages.
func (r *Runtime) known(image string) error {
	if len(r.cfg.KnownImages) == 0 || slices.Contains(r.cfg.KnownImages, image) {
		return nil
	}
	if p, ok := strings.CutPrefix(image, "exit:"); ok && slices.Contains(r.cfg.KnownImages, "exit:N") {
		if _, err := exitCode(p); err != nil {
			return &runtime.UnknownImageError{Image: image, Known: r.knownList(), Detail: err.Error()}
		}
		return nil
	}
	return &runtime.UnknownImageError{Image: image, Known: r.knownList()}
}

func (r *Runtime) knownList() []string {
	return slices.Sorted(slices.Values(r.cfg.KnownImages))
}

func exitCode(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 255 || strconv.Itoa(n) != p {
		return 0, fmt.Errorf("exit code %q is not a number from 0 to 255", p)
	}
	return n, nil
}

// Pull takes PullDuration and fails with PullFailureRate. Concurrent pulls
// of one image share its outcome. A cancelled ctx stops the wait, not the
// pull.
func (r *Runtime) Pull(ctx context.Context, image string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return runtime.ErrClosed
	}
	if r.pulled[image] {
		r.mu.Unlock()
		return nil
	}
	p := r.pulls[image]
	if p == nil {
		now := r.clock.Now()
		r.out.Emit(domain.KernelEvent{Kind: domain.EventImagePullStarted, At: now, Image: image})
		if err := r.known(image); err != nil {
			r.out.Emit(domain.KernelEvent{Kind: domain.EventImagePullFailed, At: now, Image: image, Message: err.Error()})
			r.mu.Unlock()
			return err
		}
		fail := r.rng.Float64() < r.cfg.PullFailureRate
		d := r.cfg.PullDuration.draw(r.rng)
		p = &pull{done: make(chan struct{})}
		r.pulls[image] = p
		finish := func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.finishPullLocked(image, p, fail)
		}
		if d == 0 {
			r.finishPullLocked(image, p, fail)
		} else {
			p.timer = r.clock.AfterFunc(d, finish)
		}
	}
	r.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runtime) finishPullLocked(image string, p *pull, fail bool) {
	if r.pulls[image] != p {
		return // Close ended it first
	}
	delete(r.pulls, image)
	now := r.clock.Now()
	if fail {
		p.err = fmt.Errorf("%w: image %q: simulated failure", runtime.ErrPullFailed, image)
		r.out.Emit(domain.KernelEvent{Kind: domain.EventImagePullFailed, At: now, Image: image, Message: p.err.Error()})
	} else {
		r.pulled[image] = true
		r.out.Emit(domain.KernelEvent{Kind: domain.EventImagePullFinished, At: now, Image: image})
	}
	close(p.done)
}

// Images lists the pulled images.
func (r *Runtime) Images() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.pulled))
}

// Create takes CreateDuration and fails with CreateFailureRate; a kernel
// that starts then runs for RunDuration and exits with a code drawn from
// ExitCodes (see Config for sleep and exit:N). A cancelled ctx abandons a
// creation that has not finished.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return runtime.ErrClosed
	}
	k := r.kernels[spec.Kernel]
	if k == nil {
		if !r.pulled[spec.Image] {
			r.mu.Unlock()
			return fmt.Errorf("kernel %s: %w: %q", spec.Kernel, runtime.ErrImageNotPulled, spec.Image)
		}
		// Every draw happens here, in a fixed order, whatever the outcome,
		// so one kernel's fate never shifts another's.
		fail := r.rng.Float64() < r.cfg.CreateFailureRate
		createFor := r.cfg.CreateDuration.draw(r.rng)
		runFor := r.cfg.RunDuration.draw(r.rng)
		code := r.drawExitCode()
		runFor, code, forever := r.imageBehaviour(spec, runFor, code)

		k = &kernel{spec: spec, phase: creating, started: make(chan struct{}), done: make(chan struct{})}
		r.kernels[spec.Kernel] = k
		k.logf(r.clock.Now(), "creating kernel %s of session %s from image %s", spec.Kernel, spec.Session, spec.Image)
		finish := func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.finishCreateLocked(k, fail, runFor, code, forever)
		}
		if createFor == 0 {
			r.finishCreateLocked(k, fail, runFor, code, forever)
		} else {
			k.timer = r.clock.AfterFunc(createFor, finish)
		}
	}
	r.mu.Unlock()

	select {
	case <-k.started:
		return k.startErr
	case <-ctx.Done():
	}
	r.mu.Lock()
	if k.phase == creating && k.timer.Stop() {
		r.endCreateLocked(k, fmt.Errorf("kernel %s: create abandoned: %w", spec.Kernel, ctx.Err()))
	}
	r.mu.Unlock()
	<-k.started
	return k.startErr
}

// imageBehaviour applies the dev-mode meanings of sleep and exit:N.
func (r *Runtime) imageBehaviour(spec runtime.Spec, runFor time.Duration, code int) (time.Duration, int, bool) {
	if spec.Image == "sleep" {
		return 0, 0, true
	}
	if p, ok := strings.CutPrefix(spec.Image, "exit:"); ok {
		if n, err := exitCode(p); err == nil {
			after := time.Second
			if s, err := strconv.ParseFloat(spec.Env["SOKOVAN_EXIT_AFTER"], 64); err == nil && s >= 0 {
				after = time.Duration(s * float64(time.Second))
			}
			return after, n, false
		}
	}
	return runFor, code, r.cfg.RunDuration.zero()
}

func (r *Runtime) drawExitCode() int {
	if len(r.cfg.ExitCodes) == 0 {
		return 0
	}
	total := 0.0
	for _, e := range r.cfg.ExitCodes {
		total += e.Weight
	}
	x := r.rng.Float64() * total
	for _, e := range r.cfg.ExitCodes {
		if x < e.Weight {
			return e.Code
		}
		x -= e.Weight
	}
	return r.cfg.ExitCodes[len(r.cfg.ExitCodes)-1].Code // rounding left x at the top
}

// endCreateLocked ends a creation that did not start a kernel.
func (r *Runtime) endCreateLocked(k *kernel, err error) {
	delete(r.kernels, k.spec.Kernel)
	k.phase = exited
	k.startErr = err
	close(k.started)
	close(k.done)
}

func (r *Runtime) finishCreateLocked(k *kernel, fail bool, runFor time.Duration, code int, forever bool) {
	if k.phase != creating {
		return
	}
	if fail {
		r.endCreateLocked(k, fmt.Errorf("kernel %s: %w: simulated failure", k.spec.Kernel, runtime.ErrCreateFailed))
		return
	}
	now := r.clock.Now()
	k.phase = running
	k.state = runtime.KernelState{ID: k.spec.Kernel, Session: k.spec.Session, Image: k.spec.Image, Running: true, StartedAt: now}
	k.logf(now, "started")
	r.out.Emit(domain.KernelEvent{Kind: domain.EventKernelStarted, At: now, Kernel: k.spec.Kernel, Session: k.spec.Session})
	k.timer = nil
	if !forever {
		exit := func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if k.phase == running && !k.destroying {
				r.exitLocked(k, code, domain.ReasonExited, fmt.Sprintf("exited with code %d", code))
			}
		}
		// Even a zero run goes through the clock: exiting inline would
		// report the exit before Create has returned.
		k.timer = r.clock.AfterFunc(runFor, exit)
	}
	close(k.started)
}

func (r *Runtime) exitLocked(k *kernel, code int, reason domain.ExitReason, msg string) {
	if k.phase != running {
		return
	}
	now := r.clock.Now()
	k.phase = exited
	k.state.Running = false
	k.state.ExitCode = &code
	k.state.Reason = reason
	k.state.Message = msg
	k.state.FinishedAt = now
	k.timer = nil
	k.logf(now, "%s", msg)
	r.out.Emit(domain.KernelEvent{
		Kind: domain.EventKernelTerminated, At: now, Kernel: k.spec.Kernel, Session: k.spec.Session,
		ExitCode: &code, Reason: reason, Message: msg,
	})
	close(k.done)
}

func (k *kernel) logf(at time.Time, format string, args ...any) {
	k.log = append(k.log, at.UTC().Format(time.RFC3339Nano)+" "+fmt.Sprintf(format, args...))
}

// Destroy takes DestroyDuration, cut short at grace: a kernel that stops
// within the grace ends as SIGTERM would (143), one that does not as SIGKILL
// would (137). A cancelled ctx forces the stop at once.
func (r *Runtime) Destroy(ctx context.Context, id domain.KernelID, grace time.Duration) error {
	r.mu.Lock()
	k := r.kernels[id]
	r.mu.Unlock()
	if k == nil {
		return nil
	}
	select {
	case <-k.started:
	case <-ctx.Done():
		return fmt.Errorf("destroy kernel %s: %w", id, ctx.Err())
	}
	if k.startErr != nil {
		return nil
	}
	r.mu.Lock()
	if k.phase == running && !k.destroying {
		k.destroying = true
		if k.timer != nil {
			k.timer.Stop()
		}
		d := r.cfg.DestroyDuration.draw(r.rng)
		code, msg := 128+15, "destroyed: killed by signal SIGTERM"
		if d > grace {
			d, code, msg = max(grace, 0), 128+9, "destroyed: killed by signal SIGKILL after the grace period"
		}
		stop := func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.exitLocked(k, code, domain.ReasonDestroyed, msg)
		}
		if d == 0 {
			r.exitLocked(k, code, domain.ReasonDestroyed, msg)
		} else {
			k.timer = r.clock.AfterFunc(d, stop)
		}
	}
	r.mu.Unlock()

	select {
	case <-k.done:
	case <-ctx.Done():
		r.mu.Lock()
		if k.timer != nil {
			k.timer.Stop()
		}
		r.exitLocked(k, 128+9, domain.ReasonDestroyed, "destroyed: killed by signal SIGKILL when the destroy was cancelled")
		r.mu.Unlock()
	}
	r.mu.Lock()
	if r.kernels[id] == k {
		delete(r.kernels, id)
	}
	r.mu.Unlock()
	return nil
}

// Live lists started kernels that were not destroyed.
func (r *Runtime) Live() []runtime.KernelState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]runtime.KernelState, 0, len(r.kernels))
	for _, k := range r.kernels {
		if k.phase == creating {
			continue
		}
		st := k.state
		if st.ExitCode != nil {
			c := *st.ExitCode
			st.ExitCode = &c
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b runtime.KernelState) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

// Logs returns the kernel's simulated lifecycle lines. Unlike the process
// runtime's, they go with the kernel when it is destroyed, so a long
// simulation does not accumulate them.
func (r *Runtime) Logs(id domain.KernelID) (io.ReadCloser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.kernels[id]
	if k == nil {
		return nil, fmt.Errorf("logs of %s: %w", id, runtime.ErrNotFound)
	}
	return io.NopCloser(strings.NewReader(strings.Join(k.log, "\n") + "\n")), nil
}

// Close ends everything at once: pending pulls and creations fail with
// ErrClosed, running kernels are destroyed without simulated delay, and
// the events this causes are delivered before Close returns.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		for _, image := range slices.Sorted(maps.Keys(r.pulls)) {
			p := r.pulls[image]
			if p.timer != nil {
				p.timer.Stop()
			}
			delete(r.pulls, image)
			p.err = fmt.Errorf("pull %q: %w", image, runtime.ErrClosed)
			close(p.done)
		}
		for _, id := range slices.Sorted(maps.Keys(r.kernels)) {
			k := r.kernels[id]
			if k.timer != nil {
				k.timer.Stop()
			}
			switch k.phase {
			case creating:
				r.endCreateLocked(k, fmt.Errorf("kernel %s: %w", id, runtime.ErrClosed))
			case running:
				r.exitLocked(k, 128+15, domain.ReasonDestroyed, "destroyed: runtime closed")
			}
			delete(r.kernels, id)
		}
	}
	r.mu.Unlock()
	if err := r.out.Flush(ctx); err != nil {
		return fmt.Errorf("close: deliver events: %w", err)
	}
	return nil
}
