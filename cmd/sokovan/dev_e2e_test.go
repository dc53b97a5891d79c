package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestCLIAgainstDevMode runs the built binary as a user would: `sokovan
// dev` in one process, the CLI verbs against it, then Ctrl-C.
func TestCLIAgainstDevMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev mode with real kernels")
	}
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var devOut lockedBuffer
	dev := exec.Command(binary, "dev", "--data-dir", filepath.Join(dir, "data"), "--listen", addr,
		"--agents", "2", "--agent-cpu", "4", "--agent-mem", "4g")
	dev.Stdout, dev.Stderr = &devOut, &devOut
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	defer dev.Process.Kill()
	url := "http://" + addr
	// The banner comes after the agents have registered, which is later
	// than /healthz first answers, so wait for the banner itself.
	tokenFile := filepath.Join(dir, "data", "admin-token")
	var token string
	deadline := time.Now().Add(30 * time.Second)
	for {
		if raw, err := os.ReadFile(tokenFile); err == nil {
			token = strings.TrimSpace(string(raw))
			out := devOut.String()
			if token != "" && strings.Contains(out, token) && strings.Contains(out, url) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev mode did not print its URL and admin token:\n%s", devOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp, err := http.Get(url + "/healthz"); err != nil {
		t.Fatalf("healthz after the banner: %v", err)
	} else {
		resp.Body.Close()
	}
	// The dashboard is mounted in front of the API.
	if resp, err := http.Get(url + "/"); err != nil {
		t.Fatalf("dashboard: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET / = %d %q, CSP %q; want the dashboard's page with its CSP", resp.StatusCode,
				resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"))
		}
	}
	run := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "SOKOVAN_ADDR=" + url, "SOKOVAN_TOKEN=" + token}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("sokovan %v: %v", args, err)
		}
		code := 0
		if exit != nil {
			code = exit.ExitCode()
		}
		return string(out), code
	}
	if out, code := run("session", "create", "--image", "sleep", "--cpu", "1", "--name", "svc", "--wait"); code != 0 || !strings.Contains(out, "RUNNING") {
		t.Fatalf("create --wait: exit %d\n%s", code, out)
	}
	if out, code := run("session", "create", "--image", "exit:0", "--name", "ok", "--wait-end"); code != 0 {
		t.Fatalf("exit:0 --wait-end: exit %d\n%s", code, out)
	}
	if out, code := run("session", "create", "--image", "exit:3", "--name", "bad", "--wait-end"); code == 0 {
		t.Fatalf("exit:3 --wait-end exited 0\n%s", out)
	}
	// No agent could ever hold 64 cpu: refused at once, not left waiting.
	if out, code := run("session", "create", "--image", "sleep", "--cpu", "64", "--name", "huge"); code == 0 ||
		!strings.Contains(out, "largest: 4") || !strings.Contains(out, "field: resources.cpu") {
		t.Fatalf("create huge: exit %d, want a refusal naming the largest agent\n%s", code, out)
	}
	out, code := run("session", "ls", "-o", "json")
	var list v1.SessionPage
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 3 {
		t.Fatalf("ls -o json: exit %d\n%s", code, out)
	}
	byName := map[string]string{}
	for _, s := range list.Items {
		byName[s.Name] = s.ID
	}
	if out, _ := run("session", "history", byName["bad"]); !strings.Contains(out, "DetectTermination") {
		t.Fatalf("history:\n%s", out)
	}
	if out, code := run("session", "rm", byName["svc"]); code != 0 {
		t.Fatalf("rm: %s", out)
	}
	if out, code := run("agent", "ls"); code != 0 || !strings.Contains(out, "dev-agent-1") {
		t.Fatalf("agent ls: exit %d\n%s", code, out)
	}
	// Ctrl-C stops dev mode cleanly.
	if err := dev.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- dev.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dev mode exited with %v:\n%s", err, devOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("dev mode did not stop on SIGINT")
	}
}

// lockedBuffer is written by exec's copying goroutine while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
