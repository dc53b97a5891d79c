package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestCLISessionNames: every verb takes a session's name or a unique id
// prefix as well as its id.
func TestCLISessionNames(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	id := strings.Fields(c.ok(alice, "session", "create", "--image", "sleep", "--name", "train"))[0]
	for _, ref := range []string{"train", id[:8], id} {
		if out := c.ok(alice, "session", "show", ref); !strings.Contains(out, id) {
			t.Errorf("show %s:\n%s", ref, out)
		}
		c.ok(alice, "session", "why", ref)
		c.ok(alice, "session", "history", ref)
	}
	r := c.run(alice, "session", "create", "--image", "sleep", "--name", "train")
	if r.code == 0 || !strings.Contains(r.stderr, "already have a live session named") || !strings.Contains(r.stderr, "name") {
		t.Errorf("a second live train: exit %d\nstderr: %s", r.code, r.stderr)
	}
	var dep v1.Session
	out := c.ok(alice, "session", "create", "--image", "sleep", "--depends-on", "train", "-o", "json")
	if err := json.Unmarshal([]byte(out), &dep); err != nil || len(dep.DependsOn) != 1 || dep.DependsOn[0] != id {
		t.Errorf("--depends-on train: %s (%v)", out, err)
	}
	bob := m.User("bob", "user", "p2")
	if r := c.run(bob, "session", "show", "train"); r.code == 0 || !strings.Contains(r.stderr, `no session "train"`) {
		t.Errorf("bob show alice's train: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if out := c.ok(alice, "__complete", "session", "show", ""); !strings.Contains(out, "train\tPENDING") || !strings.Contains(out, id+"\t") {
		t.Errorf("completing a session offers neither its name nor its id:\n%s", out)
	}
	if out := c.ok(alice, "session", "rm", "train"); !strings.Contains(out, "CANCELLED") {
		t.Errorf("rm train:\n%s", out)
	}
	// It never reached an agent: logs says so rather than "not yet".
	r = c.run(alice, "session", "logs", "train")
	if r.code == 0 || !strings.Contains(r.stderr, "ended CANCELLED before") || !strings.Contains(r.stderr, "never ran") {
		t.Errorf("logs of a cancelled session: exit %d\nstderr: %s", r.code, r.stderr)
	}
}

// TestCLIList: newest first, with the result and exit code, recent ended
// sessions only unless --all, and the filters.
func TestCLIList(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	create := func(args ...string) string {
		t.Helper()
		return strings.Fields(c.ok(alice, append([]string{"session", "create", "--image", "sleep"}, args...)...))[0]
	}
	old := create("--name", "old", "--type", "batch")
	first := create("--name", "first")
	second := create("--name", "second", "--type", "batch")
	// old ended two hours ago.
	if _, err := m.Store.TransitionSessions(context.Background(), []domain.SessionID{domain.SessionID(old)},
		[]domain.SessionStatus{domain.SessionPending}, domain.Transition{Session: domain.SessionCancelled,
			Kernel: domain.KernelCancelled}, "test", time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	c.ok(alice, "session", "rm", "first")

	ids := func(args ...string) []string {
		t.Helper()
		var list v1.SessionPage
		out := c.ok(alice, append([]string{"session", "ls", "-o", "json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("ls %v: %v\n%s", args, err, out)
		}
		var got []string
		for _, s := range list.Items {
			got = append(got, s.ID)
		}
		return got
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"default: live and recently ended, newest first", nil, []string{second, first}},
		{"all", []string{"--all"}, []string{second, first, old}},
		{"limit keeps the newest", []string{"--all", "--limit", "2"}, []string{second, first}},
		{"name", []string{"--all", "--name", "old"}, []string{old}},
		{"type", []string{"--all", "--type", "batch"}, []string{second, old}},
		{"group", []string{"--group", "nope"}, nil},
	} {
		if got := ids(tc.args...); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: ls %v = %v, want %v", tc.name, tc.args, got, tc.want)
		}
	}
	out := c.ok(alice, "session", "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "RESULT") || !strings.Contains(lines[0], "EXIT") ||
		!strings.Contains(lines[2], "cancelled") || !strings.HasPrefix(lines[1], second[:13]) {
		t.Errorf("ls table: want a header with RESULT and EXIT, second then first (cancelled):\n%s", out)
	}
	if r := c.run(alice, "session", "ls", "--user", "bob"); r.code == 0 {
		t.Errorf("a user listing another's sessions: exit 0")
	}
}

// TestCLIEdges: the small things a new user trips on.
func TestCLIEdges(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")

	for _, args := range [][]string{{"sesion"}, {"session", "lss"}, {"rg", "nope"}} {
		r := c.run(alice, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "unknown command") || !strings.Contains(r.stderr, "Usage:") {
			t.Errorf("sokovan %v: exit %d\nstderr: %s", args, r.code, r.stderr)
		}
	}
	if r := c.run(alice, "session", "lss"); !strings.Contains(r.stderr, "did you mean") || !strings.Contains(r.stderr, " ls?") {
		t.Errorf("session lss: no suggestion\n%s", r.stderr)
	}
	c.ok(alice, "session") // the help, asked for

	out := c.ok("", "version")
	if !strings.HasPrefix(out, "sokovan ") || !strings.Contains(out, "commit ") || !strings.Contains(out, "built ") {
		t.Errorf("version:\n%s", out)
	}
	var v struct{ Version, Commit, Date string }
	if err := json.Unmarshal([]byte(c.ok("", "version", "-o", "json")), &v); err != nil || v.Version == "" || v.Commit == "" || v.Date == "" {
		t.Errorf("version -o json: %+v (%v)", v, err)
	}

	if out := c.ok("", "session", "create", "--help"); !strings.Contains(out, "4Gi") {
		t.Errorf("create --help does not say --mem takes 4Gi:\n%s", out)
	}
	c.ok(alice, "session", "create", "--image", "sleep", "--mem", "1Gi")

	// An address without a scheme is http; one that is not an address is
	// refused plainly.
	bare := *c
	bare.m = &apitest.Manager{URL: strings.TrimPrefix(m.URL, "http://")}
	if out := bare.ok(alice, "session", "ls"); !strings.Contains(out, "STATUS") {
		t.Errorf("SOKOVAN_ADDR without a scheme:\n%s", out)
	}
	bare.m = &apitest.Manager{URL: "ftp://example.com"}
	if r := bare.run(alice, "session", "ls"); r.code == 0 || !strings.Contains(r.stderr, "want http://HOST:PORT") {
		t.Errorf("ftp address: exit %d\nstderr: %s", r.code, r.stderr)
	}
}

// TestCLIQueueUsageUsers: the queue in the order it is tried, what I
// hold against my quotas, and the users (admins).
func TestCLIQueueUsageUsers(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true, Agents: 1})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p2")
	c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "6", "--name", "first")
	c.ok(bob, "session", "create", "--image", "sleep", "--cpu", "1")
	c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "6", "--name", "second")

	out := c.ok(alice, "queue")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "3 pending, 1 of them other users'") ||
		!strings.HasPrefix(lines[2], "1 ") || !strings.Contains(lines[2], "first") || !strings.Contains(lines[2], "start") ||
		!strings.HasPrefix(lines[3], "3 ") || !strings.Contains(lines[3], "second") || !strings.Contains(lines[3], "wait") ||
		strings.Contains(out, "bob") {
		t.Errorf("alice's queue:\n%s", out)
	}
	var q v1.Queue
	if err := json.Unmarshal([]byte(c.ok(m.AdminToken, "queue", "default", "-o", "json")), &q); err != nil || len(q.Items) != 3 {
		t.Errorf("admin queue -o json: %+v (%v)", q, err)
	}
	if r := c.run(alice, "queue", "nope"); r.code == 0 || !strings.Contains(r.stderr, `no resource group "nope"`) {
		t.Errorf("queue of a missing group: exit %d\n%s", r.code, r.stderr)
	}

	if code := m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", v1.PolicyRequest{MaxSlots: map[string]string{"cpu": "8"}}, nil); code != 200 {
		t.Fatalf("policy: %d", code)
	}
	out = c.ok(alice, "usage")
	if !strings.Contains(out, "2 pending asking for cpu=12") || !strings.Contains(out, "user:alice") || !strings.Contains(out, "cpu") {
		t.Errorf("usage:\n%s", out)
	}

	out = c.ok(m.AdminToken, "user", "ls")
	if !strings.Contains(out, "alice") || !strings.Contains(out, "bob") || !strings.Contains(out, "PROJECT") {
		t.Errorf("user ls:\n%s", out)
	}
	if r := c.run(alice, "user", "ls"); r.code == 0 {
		t.Errorf("user ls as a user: exit 0")
	}
}

// TestCLIWaitBlocked: a wait on a session that cannot start says why as
// it waits, gives up after --timeout with its state, and stops on Ctrl-C
// with a line instead of an error.
func TestCLIWaitBlocked(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	// Admission refuses what no agent could ever hold: a cordoned agent
	// large enough keeps 64 cpu admitted, and waiting.
	big, err := m.Slots.ParseSlots(map[string]string{"cpu": "64", "mem": "64g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Store.RegisterAgent(t.Context(), domain.Agent{ID: "cordoned", ResourceGroup: "default",
		Address: "127.0.0.1:0", Architecture: "x86_64", Capacity: big}, time.Now()); err != nil {
		t.Fatal(err)
	}

	r := c.run(alice, "session", "create", "--image", "sleep", "--cpu", "64", "--name", "huge", "--wait", "--timeout", "2s")
	if r.code == 0 || !strings.Contains(r.stdout, "  blocked: capacity") ||
		!strings.Contains(r.stderr, "timed out after 2s") || !strings.Contains(r.stderr, "is PENDING; blocked: ") {
		t.Errorf("--timeout on a blocked session: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := c.run(alice, "session", "create", "--image", "sleep", "--timeout", "2s"); r.code == 0 ||
		!strings.Contains(r.stderr, "--timeout") {
		t.Errorf("--timeout without --wait: exit %d\nstderr: %s", r.code, r.stderr)
	}

	wait := exec.Command(binary, "session", "create", "--image", "sleep", "--cpu", "64", "--wait")
	wait.Env = []string{"HOME=" + c.home, "PATH=" + os.Getenv("PATH"), "SOKOVAN_ADDR=" + m.URL, "SOKOVAN_TOKEN=" + alice}
	var out lockedBuffer
	wait.Stdout, wait.Stderr = &out, &out
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	defer wait.Process.Kill()
	apitest.Eventually(t, 20*time.Second, "the wait to print the blocker", func() bool {
		return strings.Contains(out.String(), "  blocked: capacity")
	})
	if err := wait.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := wait.Wait(); err != nil {
		t.Fatalf("wait after Ctrl-C: %v\n%s", err, out.String())
	}
	if got := out.String(); !strings.Contains(got, "stopped waiting: ") || !strings.Contains(got, "is PENDING; blocked:") ||
		strings.Contains(got, "context canceled") {
		t.Errorf("wait after Ctrl-C printed:\n%s", got)
	}
}

// TestWhySaysWhatTheEstimateGuessed: an estimate hours out is read with
// the run times it assumed for sessions without a time limit, so a user
// can tell why it is that far.
func TestWhySaysWhatTheEstimateGuessed(t *testing.T) {
	at := time.Now().Add(8 * time.Hour)
	var b strings.Builder
	printWhy(&b, v1.Why{Status: "PENDING", EstimatedStart: &at})
	out := b.String()
	for _, want := range []string{"estimated start: ~", "without one after", "interactive 8h", "batch 1h"} {
		if !strings.Contains(out, want) {
			t.Errorf("why printed %q, want %q in it", out, want)
		}
	}
}
