package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerAgentIdentityByDefault: `sokovan server` gives agents
// identities unless told otherwise — it serves https with no agent token,
// and an agent joins with a join token, checking the manager with the one
// CA file of --ca — and the shared token runs only when asked for by
// name, with a warning; given without saying so, it stops the server.
func TestServerAgentIdentityByDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "PATH=" + os.Getenv("PATH")}
	for name, tc := range map[string]struct {
		env  []string
		args []string
		want string
	}{
		"token flag alone":  {nil, []string{"--agent-token", "agent-secret-0123456789"}, "--insecure-shared-agent-token"},
		"token env alone":   {[]string{"SOKOVAN_AGENT_TOKEN=agent-secret-0123456789"}, nil, "SOKOVAN_AGENT_TOKEN"},
		"insecure no token": {nil, []string{"--insecure-shared-agent-token"}, "needs --agent-token"},
		"identity off":      {nil, []string{"--agent-identity=false"}, "--insecure-shared-agent-token"},
		"both modes": {nil, []string{"--insecure-shared-agent-token", "--agent-token", "x", "--agent-identity"},
			"pick one"},
	} {
		args := append([]string{"server", "--db", filepath.Join(t.TempDir(), "s.db"), "--listen", "127.0.0.1:0"}, tc.args...)
		if out, code := runBinary(t, append(append([]string{}, base...), tc.env...), args...); code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d\n%s\nwant a failure naming %s", name, code, out, tc.want)
		}
	}

	insecure := startProcess(t, append(base, "SOKOVAN_ADMIN_TOKEN=admin-secret-0123456789"), "server", "--db",
		filepath.Join(dir, "insecure.db"), "--listen", freeAddr(t), "--agent-token", "agent-secret-0123456789",
		"--insecure-shared-agent-token")
	waitFor(t, "the insecure server to warn", func() bool {
		return strings.Contains(insecure.String(), "manager on http://") && strings.Contains(insecure.String(), "INSECURE")
	}, insecure)

	addr, caFile := freeAddr(t), filepath.Join(dir, "cluster-ca.pem")
	server := startProcess(t, append(base, "SOKOVAN_ADMIN_TOKEN=admin-secret-0123456789"), "server", "--db",
		filepath.Join(dir, "s.db"), "--listen", addr, "--cluster-ca-out", caFile)
	waitFor(t, "the server on https", func() bool { return strings.Contains(server.String(), "manager on https://"+addr) }, server)
	if strings.Contains(server.String(), "INSECURE") {
		t.Errorf("the default server warns of the shared token:\n%s", server.String())
	}
	user := append(base, "SOKOVAN_ADDR=https://"+addr, "SOKOVAN_TOKEN=admin-secret-0123456789", "SOKOVAN_CA="+caFile)
	out, code := runBinary(t, user, "agent", "token", "create", "--uses", "1")
	var token string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "token:"); ok {
			token = strings.TrimSpace(v)
		}
	}
	if code != 0 || token == "" {
		t.Fatalf("agent token create: exit %d\n%s", code, out)
	}
	agent := startProcess(t, base, "agent", "run", "--manager", "https://"+addr, "--ca", caFile, "--join-token", token,
		"--id", "joined", "--runtime", "sim", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "agent"),
		"--cpu", "1", "--mem", "1g", "--devices", "none", "--heartbeat", "200ms")
	waitFor(t, "the joined agent ALIVE", func() bool {
		out, _ := runBinary(t, user, "agent", "ls")
		return strings.Contains(out, "joined") && strings.Contains(out, "ALIVE")
	}, agent)
}

// waitFor polls cond for up to 30 s, failing with what proc printed.
func waitFor(t *testing.T, what string, cond func() bool, proc *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, proc.String())
		}
	}
}
