package runtime_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return t0 }

func TestTableRecordsOnce(t *testing.T) {
	t.Parallel()
	rec := runtimetest.NewRecorder(5 * time.Second)
	out := runtime.NewOutbox(rec.Sink)
	tab := runtime.NewTable[struct{}](out, fixedNow)

	k, fresh, err := tab.Claim("b", "s", "img", nil)
	if err != nil || !fresh {
		t.Fatalf("Claim = %v, fresh %v; want a fresh kernel", err, fresh)
	}
	if _, fresh, _ := tab.Claim("b", "s", "img", nil); fresh {
		t.Errorf("second Claim of one id is fresh")
	}
	if got := tab.Live(); len(got) != 0 {
		t.Errorf("Live lists a kernel still being created: %+v", got)
	}
	if !tab.Start(k, t0) || tab.Start(k, t0) {
		t.Errorf("Start: want true once, then false")
	}
	if tab.Fail(k, errors.New("late")) {
		t.Errorf("Fail after Start ended the creation again")
	}
	a, _, _ := tab.Claim("a", "s", "img", nil)
	if !tab.Fail(a, errors.New("boom")) || tab.Get("a") != nil {
		t.Errorf("a failed creation stays in the table")
	}
	exit := func(destroying bool) runtime.Exit { return runtime.Exit{Code: 3, Reason: domain.ReasonExited} }
	if !tab.Exited(k, exit) || tab.Exited(k, exit) {
		t.Errorf("Exited: want true once, then false")
	}
	if running, _ := tab.Destroying(k); running {
		t.Errorf("an exited kernel is still running to Destroying")
	}
	if err := out.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var kinds []domain.EventKind
	for _, e := range rec.All() {
		kinds = append(kinds, e.Kind)
	}
	if want := []domain.EventKind{domain.EventKernelStarted, domain.EventKernelTerminated}; !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	live := tab.Live()
	if len(live) != 1 || live[0].ExitCode == nil || *live[0].ExitCode != 3 || !live[0].FinishedAt.Equal(t0) {
		t.Errorf("Live = %+v, want b exited with 3 at %v", live, t0)
	}
}

func TestTableCreateWaitsForTheFirst(t *testing.T) {
	t.Parallel()
	tab := runtime.NewTable[struct{}](runtime.NewOutbox(nil), fixedNow)
	spec := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k", Session: "s", Image: "img"}}
	release := make(chan struct{})
	var starts atomic.Int32
	start := func(_ context.Context, k *runtime.Kernel[struct{}]) error {
		starts.Add(1)
		<-release
		tab.Start(k, t0)
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = tab.Create(context.Background(), spec, nil, start) })
	}
	for tab.Get("k") == nil || starts.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := starts.Load(); n != 1 {
		t.Errorf("%d starts for one id, want 1", n)
	}
	for _, err := range errs {
		if err != nil {
			t.Errorf("Create: %v", err)
		}
	}
	failing := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "f", Image: "img"}}
	err := tab.Create(context.Background(), failing, nil, func(context.Context, *runtime.Kernel[struct{}]) error {
		return runtime.ErrCreateFailed
	})
	if !errors.Is(err, runtime.ErrCreateFailed) || err.Error() != "kernel f: kernel create failed" {
		t.Errorf("failed Create = %v, want the kernel id and ErrCreateFailed", err)
	}
	if _, first := tab.Close(); !first {
		t.Errorf("first Close not first")
	}
	if _, _, err := tab.Claim("late", "", "img", nil); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Claim after Close = %v, want ErrClosed", err)
	}
}

func TestImagesPullOnce(t *testing.T) {
	t.Parallel()
	rec := runtimetest.NewRecorder(5 * time.Second)
	out := runtime.NewOutbox(rec.Sink)
	im := runtime.NewImages(out, fixedNow)

	release := make(chan struct{})
	var fetches atomic.Int32
	fetch := func(context.Context) (string, error) {
		fetches.Add(1)
		<-release
		return "fetched", nil
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := im.Pull(context.Background(), "img", fetch); err != nil {
				t.Errorf("Pull: %v", err)
			}
		})
	}
	for fetches.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // let the others join the pull
	close(release)
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches for one image, want 1", n)
	}

	bad := errors.New("no such image")
	if err := im.Pull(context.Background(), "bad", func(context.Context) (string, error) { return "", bad }); !errors.Is(err, bad) {
		t.Errorf("failed Pull = %v, want its fetch's error", err)
	}
	if got := im.List(); !slices.Equal(got, []string{"img"}) {
		t.Errorf("List = %v, want [img]", got)
	}
	if err := out.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var kinds []domain.EventKind
	for _, e := range rec.All() {
		kinds = append(kinds, e.Kind)
	}
	want := []domain.EventKind{domain.EventImagePullStarted, domain.EventImagePullFinished, domain.EventImagePullStarted, domain.EventImagePullFailed}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
}

// A pull that fails because its caller gave up is not the image's fault:
// one that waited for it pulls again.
func TestImagesWaiterRetriesAnAbandonedPull(t *testing.T) {
	t.Parallel()
	im := runtime.NewImages(runtime.NewOutbox(nil), fixedNow)
	ctx, cancel := context.WithCancel(context.Background())
	began := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- im.Pull(ctx, "img", func(ctx context.Context) (string, error) {
			close(began)
			<-ctx.Done()
			return "", ctx.Err()
		})
	}()
	<-began
	second := make(chan error, 1)
	go func() {
		second <- im.Pull(context.Background(), "img", func(context.Context) (string, error) { return "", nil })
	}()
	time.Sleep(10 * time.Millisecond) // let it join the first pull
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("abandoned Pull = %v, want context.Canceled", err)
	}
	if err := <-second; err != nil {
		t.Errorf("waiting Pull = %v, want it to pull again and succeed", err)
	}
	if !im.Have("img") {
		t.Errorf("image not available after the retry")
	}
}

func TestTableLookupCopies(t *testing.T) {
	t.Parallel()
	tab := runtime.NewTable[int](runtime.NewOutbox(nil), fixedNow)
	k, _, _ := tab.Claim("k", "s", "img", nil)
	k.Own = 7
	st := runtime.KernelState{Session: "s", Image: "img", ExitCode: new(int), StartedAt: t0}
	if ev, ok := tab.Adopt(k, st); !ok || ev.Kind != domain.EventKernelTerminated {
		t.Fatalf("Adopt of an exited kernel = %+v, %v", ev, ok)
	}
	got, state, ok := tab.Lookup(domain.KernelID("k"))
	if !ok || got.Own != 7 || state.Running || state.FinishedAt.IsZero() {
		t.Errorf("Lookup = %v, %+v, %v; want the adopted, exited kernel", got, state, ok)
	}
	*state.ExitCode = 9
	if _, again, _ := tab.Lookup("k"); *again.ExitCode != 0 {
		t.Errorf("writing through Lookup's ExitCode changed the table")
	}
}
