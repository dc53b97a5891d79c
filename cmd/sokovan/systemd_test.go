package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnitsVerify holds deploy/systemd's units to systemd-analyze:
// no unknown key, no missing executable, no bad specifier. systemd-analyze
// only warns (exit 0) about most mistakes, so any output fails the test.
// The units name /usr/local/bin/sokovan and /etc/sokovan; copies point
// them at this test's binary and empty environment files.
func TestSystemdUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is missing (Debian's systemd package)")
		}
		t.Skip("no systemd-analyze here")
	}
	dir := t.TempDir()
	var units []string
	src, err := filepath.Glob(filepath.Join("..", "..", "deploy", "systemd", "*.service"))
	if err != nil || len(src) != 2 {
		t.Fatalf("units %v (%v), want the server's and the agent's", src, err)
	}
	for _, f := range src {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(raw), "/usr/local/bin/sokovan", binary)
		text = strings.ReplaceAll(text, "/etc/sokovan/", dir+"/")
		out := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, out)
	}
	for _, env := range []string{"server.env", "agent.env"} {
		if err := os.WriteFile(filepath.Join(dir, env), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, units...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
