package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freeAddr picks a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// devOnce runs `sokovan dev` on dataDir until it exits by itself, within
// limit, and returns its output and exit code; it fails the test if dev
// mode is still running then.
func devOnce(t *testing.T, dataDir string, env []string, limit time.Duration) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "dev", "--data-dir", dataDir, "--listen", freeAddr(t), "--agents", "1")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("dev mode was still running after %v (want it to refuse at once):\n%s", limit, out)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if exit != nil {
		return string(out), exit.ExitCode()
	}
	return string(out), 0
}

// TestDevDataDirIsExclusiveAndKeepsItsToken: a second dev mode on a data
// dir in use is refused without touching the first, and an admin token
// that the stored data does not accept (or that is too short) is refused
// without replacing the stored one.
func TestDevDataDirIsExclusiveAndKeepsItsToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev mode")
	}
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	var out lockedBuffer
	first := exec.Command(binary, "dev", "--data-dir", dataDir, "--listen", addr, "--agents", "1")
	first.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	first.Stdout, first.Stderr = &out, &out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	tokenFile := filepath.Join(dataDir, "admin-token")
	var token string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if raw, err := os.ReadFile(tokenFile); err == nil {
			token = strings.TrimSpace(string(raw))
			if token != "" && strings.Contains(out.String(), token) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev mode did not start:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	msg, code := devOnce(t, dataDir, nil, 20*time.Second)
	if code == 0 || !strings.Contains(msg, "in use") {
		t.Errorf("second dev mode on the same dir: exit %d, want non-zero saying the dir is in use:\n%s", code, msg)
	}
	if first.ProcessState != nil {
		t.Fatalf("the first dev mode ended:\n%s", out.String())
	}

	if err := first.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first dev mode: %v\n%s", err, out.String())
	}

	for _, tc := range []struct{ name, token, want string }{
		{"another admin token", "skv_not-the-one-this-dir-was-made-with", "admin token"},
		{"a short admin token", "hunter2", "16"},
	} {
		msg, code := devOnce(t, dataDir, []string{"SOKOVAN_ADMIN_TOKEN=" + tc.token}, 30*time.Second)
		if code == 0 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: exit %d, want non-zero mentioning %q:\n%s", tc.name, code, tc.want, msg)
		}
		raw, err := os.ReadFile(tokenFile)
		if err != nil || strings.TrimSpace(string(raw)) != token {
			t.Errorf("%s: the stored token is now %q (%v), want it kept", tc.name, raw, err)
		}
	}
}
