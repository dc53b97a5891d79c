package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
)

// The docker, process and SLURM runtimes make their data directory with
// PrivateDir: absolute, whatever the working directory, and private.
func TestPrivateDir(t *testing.T) {
	t.Chdir(t.TempDir())
	dir, err := runtime.PrivateDir(filepath.Join("data", "agent"))
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(dir) {
		t.Fatalf("%q is not absolute", dir)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("stat %s: %v %v", dir, fi, err)
	}
	// Again is fine: an agent restarts on its old directory.
	if again, err := runtime.PrivateDir(dir); err != nil || again != dir {
		t.Fatalf("again: %q %v", again, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.PrivateDir(filepath.Join(dir, "file")); err == nil {
		t.Fatal("a file where the directory should be was accepted")
	}
}

func TestClockAndLogDefaults(t *testing.T) {
	now, log := runtime.ClockAndLog(nil, nil)
	if now == nil || log == nil || now().IsZero() {
		t.Fatalf("defaults: clock %t, log %v", now != nil, log)
	}
	fixed := time.Unix(7, 0)
	now, _ = runtime.ClockAndLog(func() time.Time { return fixed }, nil)
	if !now().Equal(fixed) {
		t.Fatal("a given clock was replaced")
	}
}

// Await is the wait Outbox.Flush, the sim clock and the conformance
// recorder share: done is asked again at each change, and an ended ctx
// ends the wait with its error.
func TestAwait(t *testing.T) {
	var mu sync.Mutex
	n, changed := 0, make(chan struct{})
	bump := func() {
		mu.Lock()
		n++
		close(changed)
		changed = make(chan struct{})
		mu.Unlock()
	}
	ch := func() <-chan struct{} { return changed }
	errc := make(chan error, 1)
	go func() { errc <- runtime.Await(context.Background(), &mu, func() bool { return n >= 3 }, ch) }()
	for range 3 {
		bump()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runtime.Await(ctx, &mu, func() bool { return false }, ch); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended ctx: %v", err)
	}
	if err := runtime.Await(ctx, &mu, func() bool { return true }, ch); err != nil {
		t.Fatalf("done at once, even with ctx ended: %v", err)
	}
}
