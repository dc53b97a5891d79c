package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

func TestOutboxDeliversInOrderWithoutBlocking(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	o := runtime.NewOutbox(func(e domain.KernelEvent) {
		<-release // a sink stuck until the test lets it go
		mu.Lock()
		got = append(got, e.Message)
		mu.Unlock()
	})
	var want []string
	for i := range 1000 {
		msg := fmt.Sprint(i)
		want = append(want, msg)
		o.Emit(domain.KernelEvent{Message: msg}) // returns although the sink is stuck
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := o.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with a stuck sink = %v, want the deadline", err)
	}

	close(release)
	if err := o.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

func TestOutboxConcurrentEmitters(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := make(map[string]int)
	var inSink atomic.Int32
	o := runtime.NewOutbox(func(e domain.KernelEvent) {
		if inSink.Add(1) > 1 {
			t.Error("sink called concurrently")
		}
		defer inSink.Add(-1)
		mu.Lock()
		seen[e.Message]++
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				o.Emit(domain.KernelEvent{Message: fmt.Sprintf("%d-%d", g, i)})
			}
		})
	}
	wg.Wait()
	if err := o.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 8*200 {
		t.Errorf("%d distinct events delivered, want %d", len(seen), 8*200)
	}
	for m, n := range seen {
		if n != 1 {
			t.Errorf("event %s delivered %d times", m, n)
		}
	}
}

func TestOutboxNilSink(t *testing.T) {
	t.Parallel()
	o := runtime.NewOutbox(nil)
	o.Emit(domain.KernelEvent{})
	if err := o.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	ok := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k-1.a_B", Image: "sleep"}}
	tests := []struct {
		name   string
		mutate func(*runtime.Spec)
		valid  bool
	}{
		{"minimal", func(*runtime.Spec) {}, true},
		{"uuid", func(s *runtime.Spec) { s.Kernel = "6f1c9a4e-3b2d-4c5e-8f7a-1b2c3d4e5f60" }, true},
		{"empty id", func(s *runtime.Spec) { s.Kernel = "" }, false},
		{"path in id", func(s *runtime.Spec) { s.Kernel = "../x" }, false},
		{"slash in id", func(s *runtime.Spec) { s.Kernel = "a/b" }, false},
		{"dot id", func(s *runtime.Spec) { s.Kernel = "." }, false},
		{"long id", func(s *runtime.Spec) { s.Kernel = domain.KernelID(strings.Repeat("a", 129)) }, false},
		{"empty image", func(s *runtime.Spec) { s.Image = "" }, false},
		{"index beyond size", func(s *runtime.Spec) { s.ClusterSize, s.ClusterIdx = 2, 2 }, false},
		{"last index", func(s *runtime.Spec) { s.ClusterSize, s.ClusterIdx = 2, 1 }, true},
		{"negative index", func(s *runtime.Spec) { s.ClusterIdx = -1 }, false},
		{"port too big", func(s *runtime.Spec) { s.Port = 65536 }, false},
		{"slots without registry", func(s *runtime.Spec) { s.Slots = domain.Vec{1} }, false},
		{"env name with =", func(s *runtime.Spec) { s.Env = map[string]string{"A=B": "c"} }, false},
		{"env value with NUL", func(s *runtime.Spec) { s.Env = map[string]string{"A": "b\x00"} }, false},
		{"command with NUL", func(s *runtime.Spec) { s.Command = []string{"a\x00"} }, false},
		// An array element's variables are the manager's, set after
		// admission refused them from the user; the runtime's own are not.
		{"array element's env", func(s *runtime.Spec) {
			s.Env = map[string]string{domain.EnvArrayIndex: "3", domain.EnvArrayCount: "6", domain.EnvArrayID: "a1"}
		}, true},
		{"runtime's env", func(s *runtime.Spec) { s.Env = map[string]string{runtime.EnvBindHost: "0.0.0.0"} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := ok
			tc.mutate(&s)
			err := s.Validate()
			if tc.valid && err != nil {
				t.Errorf("Validate = %v, want nil", err)
			}
			if !tc.valid && !errors.Is(err, runtime.ErrInvalidSpec) {
				t.Errorf("Validate = %v, want ErrInvalidSpec", err)
			}
		})
	}
}

func TestKernelEnv(t *testing.T) {
	t.Parallel()
	got := runtime.KernelEnv(runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k", Session: "s", Image: "img",
		Env: map[string]string{"A": "1", runtime.EnvSessionID: "spoofed"}}})
	want := map[string]string{
		"A":                     "1",
		"SOKOVAN_SESSION_ID":    "s", // the fact wins
		"SOKOVAN_KERNEL_ID":     "k",
		"SOKOVAN_IMAGE":         "img",
		"SOKOVAN_CLUSTER_ROLE":  "main", // defaults for a single kernel
		"SOKOVAN_CLUSTER_IDX":   "0",
		"SOKOVAN_CLUSTER_SIZE":  "1",
		"SOKOVAN_CLUSTER_HOSTS": "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KernelEnv (-want +got):\n%s", diff)
	}
}

func TestSpecSlot(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	v, err := reg.ParseSlots(map[string]string{"mem": "1g", "cpu": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.Spec{Slots: v, Registry: reg}
	if got := s.Slot("mem"); got != 1<<30 {
		t.Errorf("mem = %d", got)
	}
	if got := s.Slot("cpu"); got != 500 {
		t.Errorf("cpu = %d thousandths, want 500", got)
	}
	if got := s.Slot("pids"); got != 0 {
		t.Errorf("unknown slot = %d, want 0", got)
	}
	if got := (runtime.Spec{}).Slot("mem"); got != 0 {
		t.Errorf("no registry = %d, want 0", got)
	}
}

func TestUnknownImageError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("pull: %w", &runtime.UnknownImageError{Image: "x", Known: []string{"a", "b"}, Detail: "why"})
	if !errors.Is(err, runtime.ErrUnknownImage) {
		t.Error("not ErrUnknownImage")
	}
	if errors.Is(err, runtime.ErrPullFailed) {
		t.Error("matches ErrPullFailed too")
	}
	if got, want := err.Error(), `pull: image "x" is not in the catalog (known: a, b): why`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
