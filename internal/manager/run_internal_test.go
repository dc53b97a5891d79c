package manager

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// A part that fails stops the others and ends Run with its error: here
// the HTTP server, whose listener is gone. Before, the coordinator and
// the rest ran on until a signal cancelled the caller's context.
func TestRunEndsWhenAPartFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, err := Open(context.Background(), Config{DB: filepath.Join(dir, "sokovan.db"), Listen: "127.0.0.1:0",
		AgentToken: "t", Config: "file://" + filepath.Join(dir, "config.json")})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ln.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	// Only a bound on a hang: a working Run returns at once.
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Run returned %v, want the server's failure (a closed listener)", err)
		}
	case <-time.After(time.Minute):
		cancel()
		t.Fatalf("Run still running a minute after its server failed; cancelled, it returned %v", <-done)
	}
}
