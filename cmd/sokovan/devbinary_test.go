package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// devBinary is `sokovan dev` run from the built binary, with the CLI
// pointed at it: the end-to-end tests drive it as a user would.
type devBinary struct {
	t     *testing.T
	dir   string
	url   string
	token string
	cmd   *exec.Cmd
	out   *lockedBuffer
	// stopped is set once stop has run, so the cleanup does not stop the
	// process twice.
	stopped bool
}

// startDevBinary starts dev mode with the given number of 4-cpu agents
// and waits for its banner, which comes after the agents registered. It
// is stopped with SIGINT when the test ends, unless the test stopped it.
func startDevBinary(t *testing.T, agents int) *devBinary {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := &devBinary{t: t, dir: dir, url: "http://" + addr, out: &lockedBuffer{}}
	d.cmd = exec.Command(binary, "dev", "--data-dir", filepath.Join(dir, "data"), "--listen", addr,
		"--agents", fmt.Sprint(agents), "--agent-cpu", "4", "--agent-mem", "4g")
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !d.stopped {
			// A test that did not stop dev mode itself asserts nothing of
			// how it exits, only that it does.
			if err := d.stop(); errors.Is(err, errNoStop) {
				t.Errorf("%v", err)
			}
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		raw, err := os.ReadFile(filepath.Join(dir, "data", "admin-token"))
		tok := strings.TrimSpace(string(raw))
		if out := d.out.String(); err == nil && tok != "" && strings.Contains(out, tok) && strings.Contains(out, d.url) {
			d.token = tok
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev mode did not print its URL and admin token:\n%s", d.out.String())
		}
	}
}

var errNoStop = errors.New("dev mode did not stop on SIGINT")

// stop sends SIGINT, as Ctrl-C would, and waits up to 30 s for dev mode
// to exit; the error says how it did not exit cleanly.
func (d *devBinary) stop() error {
	d.stopped = true
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("dev mode exited with %v:\n%s", err, d.out.String())
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		return fmt.Errorf("%w:\n%s", errNoStop, d.out.String())
	}
}

// cli runs a CLI verb with token and returns its combined output and exit
// code.
func (d *devBinary) cli(token string, args ...string) (string, int) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = d.env(token)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		d.t.Fatalf("sokovan %v: %v", args, err)
	}
	if exit != nil {
		return string(out), exit.ExitCode()
	}
	return string(out), 0
}

// run is cli with the admin token.
func (d *devBinary) run(args ...string) (string, int) {
	d.t.Helper()
	return d.cli(d.token, args...)
}

// mustRun is run that fails the test on a non-zero exit.
func (d *devBinary) mustRun(args ...string) string {
	d.t.Helper()
	out, code := d.run(args...)
	if code != 0 {
		d.t.Fatalf("sokovan %s: exit %d\n%s\ndev mode:\n%s", strings.Join(args, " "), code, out, d.out.String())
	}
	return out
}

func (d *devBinary) env(token string) []string {
	return []string{"HOME=" + d.dir, "PATH=" + os.Getenv("PATH"), "SOKOVAN_ADDR=" + d.url, "SOKOVAN_TOKEN=" + token}
}
