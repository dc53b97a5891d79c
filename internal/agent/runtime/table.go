package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Table is the book every runtime keeps of its kernels: which ids exist,
// whether each is being created, running or has exited, and what Live
// reports. It owns the promises the Runtime interface makes about them, so
// that each runtime keeps only what is its own (how a kernel starts, how
// it stops, where its output goes):
//
//   - an id is created once: a second Create, while the first is under way
//     or after it, starts nothing and gets the first one's outcome;
//   - a kernel's start and its exit are each recorded and reported once,
//     the start always before the exit;
//   - Live lists started kernels, running or exited, sorted by id, until
//     Destroy removes them;
//   - Close refuses new kernels.
//
// K is the runtime's own part of a kernel, kept in Kernel.Own. Table's lock
// is taken inside a runtime's own lock, never around it: no callback a
// Table runs under its lock may take the runtime's.
type Table[K any] struct {
	out *Outbox
	now func() time.Time

	mu      sync.Mutex
	closed  bool
	kernels map[domain.KernelID]*Kernel[K]
}

// Kernel is one kernel's entry in a Table.
type Kernel[K any] struct {
	ID      domain.KernelID
	Session domain.SessionID
	Image   string
	// Own is the runtime's part. The Table never reads it; what the
	// runtime writes there before Start or Adopt is visible to whoever
	// finds the kernel in the Table afterwards, and anything written later
	// needs the runtime's own lock.
	Own K
	// Ports are what the kernel serves, for its kernel_started event and
	// Live; the runtime sets them, as Own, before Start.
	Ports []domain.ServicePort

	started  chan struct{} // closed once creation has ended, either way
	startErr error         // written before started is closed
	done     chan struct{} // closed once the exit is recorded, or creation failed

	// Guarded by Table.mu.
	listed     bool // started or adopted: Live shows it
	state      KernelState
	destroying bool
}

// Exit is how a kernel ended, as its runtime tells the Table.
type Exit struct {
	Code    int
	Reason  domain.ExitReason
	Message string
	// At is when it ended; zero means now, by the Table's clock.
	At time.Time
}

// NewTable returns an empty table that reports kernel_started and
// kernel_terminated through out, stamping with now.
func NewTable[K any](out *Outbox, now func() time.Time) *Table[K] {
	return &Table[K]{out: out, now: now, kernels: make(map[domain.KernelID]*Kernel[K])}
}

// Started is closed once the kernel's creation has ended, successfully or
// not; Err then says which.
func (k *Kernel[K]) Started() <-chan struct{} { return k.started }

// Done is closed once the kernel's exit has been recorded, or its creation
// failed.
func (k *Kernel[K]) Done() <-chan struct{} { return k.done }

// WaitExit waits up to grace for Done and reports whether it came; false
// at once when ctx ends. It is the polite half of a Destroy: a runtime
// forces the kernel when it returns false.
func (k *Kernel[K]) WaitExit(ctx context.Context, grace time.Duration) bool {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-k.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// Err is why the kernel's creation failed, nil if it did not. Only
// meaningful once Started is closed.
func (k *Kernel[K]) Err() error { return k.startErr }

// Wait waits for the kernel's creation to end and returns its outcome, or
// ctx's error if ctx ends first.
func (k *Kernel[K]) Wait(ctx context.Context) error {
	select {
	case <-k.started:
		return k.startErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Claim takes id for a new kernel. When the table already holds id, it
// returns that kernel and fresh false, and the caller waits for it instead
// of starting another. Otherwise admit, when not nil, may refuse the new
// kernel (an image that was not pulled); it runs under the table's lock,
// so it must not take the runtime's. A closed table refuses with
// ErrClosed.
func (t *Table[K]) Claim(id domain.KernelID, session domain.SessionID, image string, admit func() error) (k *Kernel[K], fresh bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false, ErrClosed
	}
	if k := t.kernels[id]; k != nil {
		return k, false, nil
	}
	if admit != nil {
		if err := admit(); err != nil {
			return nil, false, err
		}
	}
	return t.insertLocked(id, session, image), true, nil
}

// Hold is Claim for a kernel found rather than created, such as a container
// an earlier agent left: it ignores Close, since destroying what is found
// must work to the end, and admits any id.
func (t *Table[K]) Hold(id domain.KernelID, session domain.SessionID) (k *Kernel[K], fresh bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k := t.kernels[id]; k != nil {
		return k, false
	}
	return t.insertLocked(id, session, ""), true
}

func (t *Table[K]) insertLocked(id domain.KernelID, session domain.SessionID, image string) *Kernel[K] {
	k := &Kernel[K]{ID: id, Session: session, Image: image, started: make(chan struct{}), done: make(chan struct{})}
	t.kernels[id] = k
	return k
}

// Create is Runtime.Create for runtimes whose start runs in the caller:
// it claims spec's id (see Claim), runs start for a fresh one, and returns
// the creation's outcome. start must call Start or Adopt before it returns
// nil; an error it returns fails the creation, prefixed with the kernel
// id. A Create that finds the id taken waits for the first one's outcome,
// or for ctx.
func (t *Table[K]) Create(ctx context.Context, spec Spec, admit func() error, start func(context.Context, *Kernel[K]) error) error {
	k, fresh, err := t.Claim(spec.Kernel, spec.Session, spec.Image, admit)
	if err != nil {
		return err
	}
	if !fresh {
		return k.Wait(ctx)
	}
	err = start(ctx, k)
	if err == nil {
		err = errors.New("the runtime reported no start") // a runtime's bug; fail rather than hang waiters
	}
	t.Fail(k, fmt.Errorf("kernel %s: %w", spec.Kernel, err))
	return k.startErr
}

// Start records that k is running since at, lists it in Live, ends its
// creation and reports kernel_started. It reports false, doing nothing,
// when k's creation has already ended (abandoned, or the table closed).
func (t *Table[K]) Start(k *Kernel[K], at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.creatingLocked(k) {
		return false
	}
	k.listed = true
	k.state = KernelState{ID: k.ID, Session: k.Session, Image: k.Image, Running: true, StartedAt: at,
		Ports: slices.Clone(k.Ports)}
	// Reported before any exit can be: the runtime starts watching for the
	// exit only after Start returns.
	t.out.Emit(domain.KernelEvent{Kind: domain.EventKernelStarted, At: at, Kernel: k.ID, Session: k.Session,
		ServicePorts: slices.Clone(k.Ports)})
	close(k.started)
	return true
}

// Adopt lists k, whose creation has not ended, as st describes a kernel
// found already existing: running, or exited when st.ExitCode is set. It
// reports nothing, since whether that is news depends on who found it;
// the event it returns is what would describe it (kernel_started, with
// st.Ports, which become k's, or kernel_terminated). ok is false, and
// nothing done, when k's creation has already ended.
func (t *Table[K]) Adopt(k *Kernel[K], st KernelState) (ev domain.KernelEvent, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.creatingLocked(k) {
		return domain.KernelEvent{}, false
	}
	k.Session, k.Image = st.Session, st.Image
	k.Ports = slices.Clone(st.Ports)
	st.ID = k.ID
	st.Ports = slices.Clone(st.Ports)
	if st.ExitCode != nil {
		c := *st.ExitCode
		st.ExitCode = &c
		st.Running = false
		if st.FinishedAt.IsZero() {
			st.FinishedAt = t.now()
		}
	}
	k.listed = true
	k.state = st
	close(k.started)
	if st.ExitCode == nil {
		return domain.KernelEvent{Kind: domain.EventKernelStarted, At: st.StartedAt, Kernel: k.ID, Session: k.Session,
			ServicePorts: slices.Clone(k.Ports)}, true
	}
	close(k.done)
	return exitEvent(st), true
}

// Fail ends k's creation with err: k leaves the table and whoever waits
// for it gets err. It reports false, doing nothing, when the creation had
// already ended.
func (t *Table[K]) Fail(k *Kernel[K], err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.creatingLocked(k) {
		return false
	}
	if t.kernels[k.ID] == k {
		delete(t.kernels, k.ID)
	}
	k.startErr = err
	close(k.started)
	close(k.done)
	return true
}

func (t *Table[K]) creatingLocked(k *Kernel[K]) bool {
	select {
	case <-k.started:
		return false
	default:
		return true
	}
}

// Creating reports whether k's creation is still under way.
func (t *Table[K]) Creating(k *Kernel[K]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.creatingLocked(k)
}

// Exited records k's exit, as describe tells it, and reports
// kernel_terminated, once: it reports false, doing nothing, when k is not
// running (never started, or its exit already recorded). describe runs
// under the table's lock and learns whether Destroy (or Close) is stopping
// k, so that a Destroy racing a kernel's own exit is either seen by the
// exit or finds the exit already recorded; it must not take the runtime's
// lock.
func (t *Table[K]) Exited(k *Kernel[K], describe func(destroying bool) Exit) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !k.listed || !k.state.Running {
		return false
	}
	e := describe(k.destroying)
	if e.At.IsZero() {
		e.At = t.now()
	}
	st := &k.state
	st.Running = false
	st.ExitCode = &e.Code
	st.Reason = e.Reason
	st.Message = e.Message
	st.FinishedAt = e.At
	close(k.done)
	t.out.Emit(exitEvent(*st))
	return true
}

func exitEvent(st KernelState) domain.KernelEvent {
	// A copy of the code: the event outlives the table's entry and travels
	// to other goroutines.
	code := *st.ExitCode
	return domain.KernelEvent{
		Kind: domain.EventKernelTerminated, At: st.FinishedAt, Kernel: st.ID, Session: st.Session,
		ExitCode: &code, Reason: st.Reason, Message: st.Message,
	}
}

// Destroying marks k, which has started, as being stopped by Destroy, so
// its exit is recorded as one. running is false when its exit has already
// been recorded: there is nothing to stop. first is true for the first
// mark only.
func (t *Table[K]) Destroying(k *Kernel[K]) (running, first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !k.listed || !k.state.Running {
		return false, false
	}
	first = !k.destroying
	k.destroying = true
	return true, first
}

// Stopping reports whether Destroying has marked k.
func (t *Table[K]) Stopping(k *Kernel[K]) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return k.destroying
}

// Destroy is the part of Runtime.Destroy that every runtime shares: it
// waits for k's creation to end (or ctx), runs stop for a kernel that
// started, and then removes k from the table. A nil k, or one whose
// creation failed, is already stopped. stop's error is returned, prefixed
// with the kernel id, and k then stays.
func (t *Table[K]) Destroy(ctx context.Context, k *Kernel[K], stop func(context.Context, *Kernel[K]) error) error {
	if k == nil {
		return nil
	}
	select {
	case <-k.started:
	case <-ctx.Done():
		return fmt.Errorf("destroy kernel %s: %w", k.ID, ctx.Err())
	}
	if k.startErr != nil {
		return nil // it never ran
	}
	if err := stop(ctx, k); err != nil {
		return fmt.Errorf("destroy kernel %s: %w", k.ID, err)
	}
	t.Remove(k)
	return nil
}

// Remove takes k out of the table, unless its id has since been taken by
// another kernel.
func (t *Table[K]) Remove(k *Kernel[K]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kernels[k.ID] == k {
		delete(t.kernels, k.ID)
	}
}

// Get returns the kernel the table holds for id, in any phase, or nil.
func (t *Table[K]) Get(id domain.KernelID) *Kernel[K] {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.kernels[id]
}

// Lookup returns a kernel Live would list, with its state.
func (t *Table[K]) Lookup(id domain.KernelID) (*Kernel[K], KernelState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.kernels[id]
	if k == nil || !k.listed {
		return nil, KernelState{}, false
	}
	return k, copyState(k.state), true
}

// HasSession reports whether any kernel of session s is in the table.
func (t *Table[K]) HasSession(s domain.SessionID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range t.kernels {
		if k.Session == s {
			return true
		}
	}
	return false
}

// Live is Runtime.Live: the started kernels, running or exited, sorted by
// id.
func (t *Table[K]) Live() []KernelState {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]KernelState, 0, len(t.kernels))
	for _, k := range t.kernels {
		if k.listed {
			out = append(out, copyState(k.state))
		}
	}
	slices.SortFunc(out, func(a, b KernelState) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

// copyState keeps callers from writing through ExitCode into the table.
func copyState(st KernelState) KernelState {
	st.Ports = slices.Clone(st.Ports)
	if st.ExitCode != nil {
		c := *st.ExitCode
		st.ExitCode = &c
	}
	return st
}

// Closed reports whether Close has been called.
func (t *Table[K]) Closed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// Close refuses every later Claim with ErrClosed and returns the kernels
// the table holds, sorted by id, for the runtime to end. first is false,
// and ks nil, when the table was closed already.
func (t *Table[K]) Close() (ks []*Kernel[K], first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false
	}
	t.closed = true
	for _, id := range slices.Sorted(maps.Keys(t.kernels)) {
		ks = append(ks, t.kernels[id])
	}
	return ks, true
}

// CloseAll closes the table and runs destroy for each kernel it held, all
// at once, returning their errors joined. first is false when the table
// was closed already; nothing is destroyed then.
func (t *Table[K]) CloseAll(ctx context.Context, destroy func(context.Context, *Kernel[K]) error) (first bool, err error) {
	ks, first := t.Close()
	if !first {
		return false, nil
	}
	errs := make([]error, len(ks))
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Go(func() { errs[i] = destroy(ctx, k) })
	}
	wg.Wait()
	return true, errors.Join(errs...)
}
