package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
)

// registration runs `sokovan agent run` with args against a fake manager
// and returns what the agent registered with.
func registration(t *testing.T, args ...string) agentrpc.Register {
	t.Helper()
	regs := make(chan agentrpc.Register, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/agent/register":
			var reg agentrpc.Register
			_ = json.NewDecoder(r.Body).Decode(&reg)
			select {
			case regs <- reg:
			default:
			}
			_ = json.NewEncoder(w).Encode(agentrpc.Registered{Epoch: 1})
		case "/v1/agent/heartbeat":
			_ = json.NewEncoder(w).Encode(agentrpc.HeartbeatReply{})
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	root := newRoot()
	var logs bytes.Buffer
	root.SetOut(io.Discard)
	root.SetErr(&logs)
	root.SetArgs(append([]string{"agent", "run", "--manager", srv.URL, "--token", "tok", "--id", "a1",
		"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--cpu", "1", "--mem", "1g", "--devices", "none"}, args...))
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent run: %v", err)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	}()
	select {
	case reg := <-regs:
		return reg
	case err := <-done:
		done <- err
		t.Fatalf("agent run ended before registering: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no registration in 30s")
	}
	return agentrpc.Register{}
}

// A slurm agent says it runs a session's own command only when
// --slurm-allow-command opens it; the process runtime's --allow-command
// does not, since the slurm runtime would refuse the command.
func TestSlurmAgentAllowsCommandOnlyWithItsFlag(t *testing.T) {
	slurmArgs := []string{"--runtime", "slurm", "--slurm-partition", "debug"}
	cases := []struct {
		name  string
		extra []string
		want  bool
	}{
		{"no flag", nil, false},
		{"process flag", []string{"--allow-command"}, false},
		{"slurm flag", []string{"--slurm-allow-command"}, true},
	}
	for _, c := range cases {
		reg := registration(t, append(slurmArgs, c.extra...)...)
		if reg.AllowsCommand != c.want || reg.Runtime != "slurm" {
			t.Errorf("%s: registered runtime %q with allows_command %v, want slurm with %v", c.name, reg.Runtime, reg.AllowsCommand, c.want)
		}
	}
}
