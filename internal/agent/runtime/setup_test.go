package runtime_test

import (
	"os"
	"path/filepath"
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
