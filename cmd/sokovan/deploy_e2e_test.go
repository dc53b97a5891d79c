package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestDeployCLIAgainstDevMode drives `sokovan deploy` against `sokovan
// dev`, with real http-echo kernels behind the deployment proxy.
func TestDeployCLIAgainstDevMode(t *testing.T) {
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
	tokenFile := filepath.Join(dir, "data", "admin-token")
	var token string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if raw, err := os.ReadFile(tokenFile); err == nil {
			token = strings.TrimSpace(string(raw))
			if token != "" && strings.Contains(devOut.String(), token) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev mode did not start:\n%s", devOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	run := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "SOKOVAN_ADDR=" + url, "SOKOVAN_TOKEN=" + token}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("sokovan %v: %v", args, err)
		}
		if exit != nil {
			return string(out), exit.ExitCode()
		}
		return string(out), 0
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, code := run(args...)
		if code != 0 {
			t.Fatalf("sokovan %s: exit %d\n%s\ndev mode:\n%s", strings.Join(args, " "), code, out, devOut.String())
		}
		return out
	}

	out := mustRun("deploy", "create", "echo", "--image", "http-echo", "--replicas", "2", "--cpu", "1", "--mem", "64m",
		"--health-interval", "200ms", "--health-initial-delay", "0s", "--health-failure-threshold", "2", "--wait", "60s")
	if !strings.Contains(out, "READY") {
		t.Fatalf("create --wait did not report READY:\n%s", out)
	}
	if out := mustRun("deploy", "ls"); !strings.Contains(out, "echo") || !strings.Contains(out, "2/2") {
		t.Errorf("ls:\n%s", out)
	}
	req, _ := http.NewRequest("GET", url+"/v1/deployments/echo/proxy/generate", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Sokovan-Kernel") == "" {
		t.Errorf("through the proxy: %d, kernel %q", resp.StatusCode, resp.Header.Get("X-Sokovan-Kernel"))
	}
	if out := mustRun("deploy", "update", "echo", "--autoscale-min", "1", "--autoscale-max", "3", "--autoscale-target", "4"); !strings.Contains(out, "revision 1") {
		t.Errorf("update --autoscale-*:\n%s", out)
	}
	if out := mustRun("deploy", "show", "echo"); !strings.Contains(out, "autoscale:    1 to 3 replicas at 4 requests") {
		t.Errorf("show with autoscaling:\n%s", out)
	}
	mustRun("deploy", "update", "echo", "--autoscale-max", "0")
	if out := mustRun("deploy", "scale", "echo", "1"); !strings.Contains(out, "1 replicas") {
		t.Errorf("scale:\n%s", out)
	}
	if out := mustRun("deploy", "routes", "echo"); !strings.Contains(out, "HEALTHY") {
		t.Errorf("routes:\n%s", out)
	}
	if out := mustRun("deploy", "history", "echo"); !strings.Contains(out, "CheckPendingDeployment") ||
		!strings.Contains(out, "HealthCheckRoute") {
		t.Errorf("history:\n%s", out)
	}
	var shown v1.Deployment
	if err := json.Unmarshal([]byte(mustRun("deploy", "show", "echo", "-o", "json")), &shown); err != nil || shown.Name != "echo" {
		t.Errorf("show -o json: %v %+v", err, shown)
	}
	if out, code := run("deploy", "scale", "echo", "65"); code == 0 || !strings.Contains(out, "replicas") {
		t.Errorf("scale 65: exit %d\n%s", code, out)
	}
	if out, code := run("deploy", "create", "bad", "--image", "nope"); code == 0 || !strings.Contains(out, "image") {
		t.Errorf("create with an unknown image: exit %d\n%s", code, out)
	}
	mustRun("deploy", "rm", "echo")
	for deadline := time.Now().Add(30 * time.Second); ; {
		var d v1.Deployment
		if json.Unmarshal([]byte(mustRun("deploy", "show", "echo", "-o", "json")), &d) == nil && d.Status == "DESTROYED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("echo not DESTROYED:\n%s", mustRun("deploy", "show", "echo"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := dev.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- dev.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("dev mode exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("dev mode did not stop on SIGINT")
	}
}
