package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
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

	// mu orders everything the runtime does: every draw from rng, every
	// timer and every event happen under it, which is what makes a seed
	// replay. The books below take their own locks inside it.
	mu      sync.Mutex
	rng     *rand.Rand
	kernels *runtime.Table[simKernel]
	images  *runtime.Images
	// pullTimers are the pending pulls' timers, by image.
	pullTimers map[string]Timer
}

type kernel = runtime.Kernel[simKernel]

// simKernel is what the sim runtime keeps of a kernel beside the table's
// part. Guarded by Runtime.mu.
type simKernel struct {
	timer Timer // the pending create, run or destroy step
	log   []string
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
	out := runtime.NewOutbox(cfg.Sink)
	return &Runtime{
		cfg:   cfg,
		clock: clock,
		out:   out,
		// The second PCG word is fixed: one seed is all a replay needs.
		rng:        rand.New(rand.NewPCG(cfg.Seed, 0x736f6b6f76616e)),
		kernels:    runtime.NewTable[simKernel](out, clock.Now),
		images:     runtime.NewImages(out, clock.Now),
		pullTimers: make(map[string]Timer),
	}, nil
}

// known checks an image against KnownImages.
func (r *Runtime) known(image string) error {
	if len(r.cfg.KnownImages) == 0 || slices.Contains(r.cfg.KnownImages, image) {
		return nil
	}
	if p, ok := strings.CutPrefix(image, "exit:"); ok && slices.Contains(r.cfg.KnownImages, "exit:N") {
		if _, err := runtime.ParseExitCode(p); err != nil {
			return &runtime.UnknownImageError{Image: image, Known: r.knownList(), Detail: err.Error()}
		}
		return nil
	}
	return &runtime.UnknownImageError{Image: image, Known: r.knownList()}
}

func (r *Runtime) knownList() []string {
	return slices.Sorted(slices.Values(r.cfg.KnownImages))
}

// Pull takes PullDuration and fails with PullFailureRate. Concurrent pulls
// of one image share its outcome. A cancelled ctx stops the wait, not the
// pull.
func (r *Runtime) Pull(ctx context.Context, image string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	p, first, err := r.images.Begin(image)
	if err != nil || p == nil {
		r.mu.Unlock()
		return err
	}
	if first {
		if err := r.known(image); err != nil {
			r.images.Finish(p, "", err)
			r.mu.Unlock()
			return err
		}
		fail := r.rng.Float64() < r.cfg.PullFailureRate
		d := r.cfg.PullDuration.draw(r.rng)
		if d == 0 {
			r.finishPullLocked(image, p, fail)
		} else {
			r.pullTimers[image] = r.clock.AfterFunc(d, func() {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.finishPullLocked(image, p, fail)
			})
		}
	}
	r.mu.Unlock()
	return p.Wait(ctx)
}

func (r *Runtime) finishPullLocked(image string, p *runtime.Pull, fail bool) {
	delete(r.pullTimers, image)
	var err error
	if fail {
		err = fmt.Errorf("%w: image %q: simulated failure", runtime.ErrPullFailed, image)
	}
	r.images.Finish(p, "", err) // ignored when Close ended it first
}

// Images lists the pulled images.
func (r *Runtime) Images() []string { return r.images.List() }

// Create takes CreateDuration and fails with CreateFailureRate; a kernel
// that starts then runs for RunDuration and exits with a code drawn from
// ExitCodes (see Config for sleep and exit:N). A cancelled ctx abandons a
// creation that has not finished.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	k, fresh, err := r.kernels.Claim(spec.Kernel, spec.Session, spec.Image, func() error {
		if !r.images.Have(spec.Image) {
			return fmt.Errorf("kernel %s: %w: %q", spec.Kernel, runtime.ErrImageNotPulled, spec.Image)
		}
		return nil
	})
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if fresh {
		// Every draw happens here, in a fixed order, whatever the outcome,
		// so one kernel's fate never shifts another's.
		fail := r.rng.Float64() < r.cfg.CreateFailureRate
		createFor := r.cfg.CreateDuration.draw(r.rng)
		runFor := r.cfg.RunDuration.draw(r.rng)
		code := r.drawExitCode()
		runFor, code, forever := r.imageBehaviour(spec, runFor, code)

		logf(k, r.clock.Now(), "creating kernel %s of session %s from image %s", spec.Kernel, spec.Session, spec.Image)
		finish := func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.finishCreateLocked(k, fail, runFor, code, forever)
		}
		if createFor == 0 {
			r.finishCreateLocked(k, fail, runFor, code, forever)
		} else {
			k.Own.timer = r.clock.AfterFunc(createFor, finish)
		}
	}
	r.mu.Unlock()

	select {
	case <-k.Started():
		return k.Err()
	case <-ctx.Done():
	}
	r.mu.Lock()
	if r.kernels.Creating(k) && k.Own.timer.Stop() {
		r.kernels.Fail(k, fmt.Errorf("kernel %s: create abandoned: %w", spec.Kernel, ctx.Err()))
	}
	r.mu.Unlock()
	<-k.Started()
	return k.Err()
}

// imageBehaviour applies the dev-mode meanings of sleep and exit:N.
func (r *Runtime) imageBehaviour(spec runtime.Spec, runFor time.Duration, code int) (time.Duration, int, bool) {
	if spec.Image == "sleep" {
		return 0, 0, true
	}
	if p, ok := strings.CutPrefix(spec.Image, "exit:"); ok {
		if n, err := runtime.ParseExitCode(p); err == nil {
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

func (r *Runtime) finishCreateLocked(k *kernel, fail bool, runFor time.Duration, code int, forever bool) {
	if !r.kernels.Creating(k) {
		return
	}
	if fail {
		r.kernels.Fail(k, fmt.Errorf("kernel %s: %w: simulated failure", k.ID, runtime.ErrCreateFailed))
		return
	}
	now := r.clock.Now()
	logf(k, now, "started")
	r.kernels.Start(k, now)
	k.Own.timer = nil
	if !forever {
		exit := func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.kernels.Stopping(k) {
				return // the pending destroy ends it
			}
			r.exitLocked(k, code, domain.ReasonExited, fmt.Sprintf("exited with code %d", code))
		}
		// Even a zero run goes through the clock: exiting inline would
		// report the exit before Create has returned.
		k.Own.timer = r.clock.AfterFunc(runFor, exit)
	}
}

func (r *Runtime) exitLocked(k *kernel, code int, reason domain.ExitReason, msg string) {
	recorded := r.kernels.Exited(k, func(bool) runtime.Exit {
		return runtime.Exit{Code: code, Reason: reason, Message: msg}
	})
	if recorded {
		k.Own.timer = nil
		logf(k, r.clock.Now(), "%s", msg)
	}
}

func logf(k *kernel, at time.Time, format string, args ...any) {
	k.Own.log = append(k.Own.log, at.UTC().Format(time.RFC3339Nano)+" "+fmt.Sprintf(format, args...))
}

// Destroy takes DestroyDuration, cut short at grace: a kernel that stops
// within the grace ends as SIGTERM would (143), one that does not as SIGKILL
// would (137). A cancelled ctx forces the stop at once.
func (r *Runtime) Destroy(ctx context.Context, id domain.KernelID, grace time.Duration) error {
	return r.kernels.Destroy(ctx, r.kernels.Get(id), func(ctx context.Context, k *kernel) error {
		r.stop(ctx, k, grace)
		return nil
	})
}

// stop ends a started kernel, on the clock, and returns once it has.
func (r *Runtime) stop(ctx context.Context, k *kernel, grace time.Duration) {
	r.mu.Lock()
	if running, first := r.kernels.Destroying(k); running && first {
		if k.Own.timer != nil {
			k.Own.timer.Stop()
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
			k.Own.timer = r.clock.AfterFunc(d, stop)
		}
	}
	r.mu.Unlock()

	select {
	case <-k.Done():
	case <-ctx.Done():
		r.mu.Lock()
		if k.Own.timer != nil {
			k.Own.timer.Stop()
		}
		r.exitLocked(k, 128+9, domain.ReasonDestroyed, "destroyed: killed by signal SIGKILL when the destroy was cancelled")
		r.mu.Unlock()
	}
}

// Live lists started kernels that were not destroyed.
func (r *Runtime) Live() []runtime.KernelState { return r.kernels.Live() }

// Logs returns the kernel's simulated lifecycle lines. Unlike the process
// runtime's, they go with the kernel when it is destroyed, so a long
// simulation does not accumulate them.
func (r *Runtime) Logs(id domain.KernelID) (io.ReadCloser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.kernels.Get(id)
	if k == nil {
		return nil, fmt.Errorf("logs of %s: %w", id, runtime.ErrNotFound)
	}
	return io.NopCloser(strings.NewReader(strings.Join(k.Own.log, "\n") + "\n")), nil
}

// Flush waits until every event emitted so far has been handed to the
// sink, or ctx ends. A simulation driving runtimes from one goroutine
// calls it after each step, so events reach it in a deterministic order
// instead of whenever the delivery goroutine runs.
func (r *Runtime) Flush(ctx context.Context) error {
	return r.out.Flush(ctx)
}

// Close ends everything at once: pending pulls and creations fail with
// ErrClosed, running kernels are destroyed without simulated delay, and
// the events this causes are delivered before Close returns.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if ks, first := r.kernels.Close(); first {
		r.images.Close()
		for _, image := range r.images.Cancel() {
			if t := r.pullTimers[image]; t != nil {
				t.Stop()
			}
			delete(r.pullTimers, image)
		}
		for _, k := range ks {
			if k.Own.timer != nil {
				k.Own.timer.Stop()
			}
			if !r.kernels.Fail(k, fmt.Errorf("kernel %s: %w", k.ID, runtime.ErrClosed)) {
				r.exitLocked(k, 128+15, domain.ReasonDestroyed, "destroyed: runtime closed")
			}
			r.kernels.Remove(k)
		}
	}
	r.mu.Unlock()
	if err := r.out.Flush(ctx); err != nil {
		return fmt.Errorf("close: deliver events: %w", err)
	}
	return nil
}
