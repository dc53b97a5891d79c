package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// binary is the sokovan command built for the CLI tests, which run it
// as a user would, against a manager running in the test.
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sokovan-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "sokovan")
	goTool := "go"
	if _, err := exec.LookPath(goTool); err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go") // the toolchain running this test
	}
	build := exec.Command(goTool, "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sokovan:", err)
		return 1
	}
	return m.Run()
}

// cli runs the binary against a manager.
type cli struct {
	t    *testing.T
	m    *apitest.Manager
	home string
}

func newCLI(t *testing.T, m *apitest.Manager) *cli {
	return &cli{t: t, m: m, home: t.TempDir()}
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs sokovan with the token (none when empty) and its own config
// directory, so no test reads a developer's saved login.
func (c *cli) run(token string, args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	env := []string{"HOME=" + c.home, "XDG_CONFIG_HOME=" + filepath.Join(c.home, ".config"), "PATH=" + os.Getenv("PATH")}
	if c.m != nil {
		env = append(env, "SOKOVAN_ADDR="+c.m.URL)
	}
	if token != "" {
		env = append(env, "SOKOVAN_TOKEN="+token)
	}
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		c.t.Fatalf("sokovan %v: %v", args, err)
	}
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// ok runs sokovan and fails the test unless it exits 0.
func (c *cli) ok(token string, args ...string) string {
	c.t.Helper()
	r := c.run(token, args...)
	if r.code != 0 {
		c.t.Fatalf("sokovan %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func TestCLICreateWaitRunning(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	out := c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "1", "--mem", "1g", "--name", "web", "--wait")
	// The stream opens with the session as it is, which under load may
	// already be past PENDING; from there each status is printed once, in
	// lifecycle order, ending at RUNNING.
	order := []string{"PENDING", "SCHEDULED", "PREPARING", "PREPARED", "CREATING", "RUNNING"}
	last := -1
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		// "date time id STATUS  (reason)"; indented lines say what the
		// session waits for in between.
		if strings.HasPrefix(line, " ") {
			continue
		}
		f := strings.Fields(line)
		i := -1
		if len(f) >= 4 {
			i = slices.Index(order, f[3])
		}
		if i <= last {
			t.Fatalf("wait printed:\n%s\nwant statuses in lifecycle order, each once", out)
		}
		last = i
	}
	if last != len(order)-1 {
		t.Errorf("wait printed:\n%s\nwant RUNNING last", out)
	}

	// A batch job that exits 0 counts as success; one that exits 3 does not.
	if out := c.ok(alice, "session", "create", "--image", "exit:0", "--type", "batch", "--wait-end"); !strings.Contains(out, "TERMINATED") {
		t.Errorf("--wait-end stopped before the end:\n%s", out)
	}
	r := c.run(alice, "session", "create", "--image", "exit:3", "--type", "batch", "--wait-end", "-o", "json")
	if r.code == 0 || !strings.Contains(r.stderr, "outcome failure") || !strings.Contains(r.stderr, "exited 3") {
		t.Errorf("failed job: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var s v1.Session
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.Outcome != "failure" {
		t.Errorf("-o json with --wait printed %q (%v)", r.stdout, err)
	}
	// An image no agent has ends CANCELLED after its retries.
	r = c.run(alice, "session", "create", "--image", "no-such-image", "--wait")
	if r.code == 0 || !strings.Contains(r.stderr, "CANCELLED") || !strings.Contains(r.stdout, "CANCELLED") {
		t.Errorf("unknown image: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestCLIListShowAndRemove(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	id := strings.Fields(c.ok(alice, "session", "create", "--image", "sleep", "--slot", "cpu=0.5", "--slot", "mem=256m"))[0]
	var list v1.SessionPage
	out := c.ok(alice, "session", "ls", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("ls -o json is not JSON: %v\n%s", err, out)
	}
	if len(list.Items) != 1 || list.Items[0].ID != id || list.Items[0].RequestedSlots["cpu"] != "0.5" {
		t.Errorf("ls -o json: %+v", list.Items)
	}
	if out := c.ok(alice, "session", "ls"); !strings.Contains(out, id[:13]) || !strings.Contains(out, "STATUS") {
		t.Errorf("ls table:\n%s", out)
	}
	if out := c.ok(alice, "session", "show", id); !strings.Contains(out, id+"-k0") || !strings.Contains(out, "cpu=0.5 mem=256m") {
		t.Errorf("show:\n%s", out)
	}
	if out := c.ok(alice, "session", "history", id); !strings.Contains(out, "ScheduleNewSessions") {
		t.Errorf("history:\n%s", out)
	}
	apitest.Eventually(t, 20*time.Second, "the session to run", func() bool {
		return strings.Contains(c.ok(alice, "session", "show", id), "RUNNING")
	})
	if out := c.ok(alice, "session", "rm", id); !strings.Contains(out, "TERMINATING") {
		t.Errorf("rm:\n%s", out)
	}
	if out := c.ok(alice, "agent", "ls", "-o", "json"); !json.Valid([]byte(out)) {
		t.Errorf("agent ls -o json:\n%s", out)
	}
	if out := c.ok(alice, "rg", "show", "default"); !strings.Contains(out, "Sequencer:     fifo") ||
		!strings.Contains(out, "Default slots: cpu=") {
		t.Errorf("rg show:\n%s", out)
	}
	if out := c.ok(m.AdminToken, "rg", "set", "default", "--head-of-line", "reserve", "--reservation-depth", "3"); !strings.Contains(out, "Head of line:  reserve (depth 3)") {
		t.Errorf("rg set --head-of-line reserve:\n%s", out)
	}
}

// TestCLIAgents: agent ls shows each agent's runtime and kernel cap, and
// its RPC address to admins only, as the manager sends it.
func TestCLIAgents(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true, Agents: 1})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	capacity, err := m.Slots.ParseSlots(map[string]string{"cpu": "4", "mem": "8g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Store.RegisterAgent(context.Background(), domain.Agent{ID: "capped", ResourceGroup: "default",
		Address: "10.0.0.5:8471", Architecture: "x86_64", Runtime: "process", MaxKernels: 8,
		Status: domain.AgentAlive, Schedulable: true, Capacity: capacity}, time.Now()); err != nil {
		t.Fatal(err)
	}
	capped := func(out string) string {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "capped ") {
				return line
			}
		}
		t.Fatalf("agent ls lists no agent capped:\n%s", out)
		return ""
	}
	for _, tc := range []struct {
		name, token string
		address     bool
	}{{"admin", m.AdminToken, true}, {"user", alice, false}} {
		out := c.ok(tc.token, "agent", "ls")
		header, _, _ := strings.Cut(out, "\n")
		if got := strings.Contains(header, "ADDRESS"); got != tc.address {
			t.Errorf("%s: ADDRESS column %v, want %v:\n%s", tc.name, got, tc.address, out)
		}
		row := strings.Fields(capped(out))
		for _, want := range []string{"process", "0/8"} {
			if !slices.Contains(row, want) {
				t.Errorf("%s: row %q lacks %q", tc.name, row, want)
			}
		}
		if got := slices.Contains(row, "10.0.0.5:8471"); got != tc.address {
			t.Errorf("%s: address shown %v, want %v: %q", tc.name, got, tc.address, row)
		}

		var list v1.List[v1.Agent]
		if err := json.Unmarshal([]byte(c.ok(tc.token, "agent", "ls", "-o", "json")), &list); err != nil {
			t.Fatalf("%s: agent ls -o json: %v", tc.name, err)
		}
		i := slices.IndexFunc(list.Items, func(a v1.Agent) bool { return a.ID == "capped" })
		if i < 0 {
			t.Fatalf("%s: agent ls -o json lacks agent capped: %+v", tc.name, list.Items)
		}
		wantAddr := ""
		if tc.address {
			wantAddr = "10.0.0.5:8471"
		}
		if a := list.Items[i]; a.MaxKernels != 8 || a.Runtime != "process" || a.Address != wantAddr {
			t.Errorf("%s: agent ls -o json: %+v, want max_kernels 8, runtime process, address %q", tc.name, a, wantAddr)
		}
	}
}

func TestCLIWhyQuota(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	if out := c.ok(m.AdminToken, "policy", "set", "user", "alice", "--max-slot", "cpu=3"); !strings.Contains(out, "cpu=3") {
		t.Errorf("policy set:\n%s", out)
	}
	c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "2", "--wait")
	// 2 more would make 4 of the 3 allowed.
	id := strings.Fields(c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "2"))[0]
	out := c.ok(alice, "session", "why", id)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("why printed %d lines:\n%s", len(lines), out)
	}
	for _, want := range []string{"quota", "user:alice cpu", "requested 2, available 1", "hint:", "sokovan policy set user alice --max-slot cpu="} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("why line %q lacks %q", lines[0], want)
		}
	}
	// Once the quota itself is smaller than the request, waiting is no use,
	// and a new request that large is refused at once.
	c.ok(m.AdminToken, "policy", "set", "user", "alice", "--max-slot", "cpu=1")
	if out := c.ok(alice, "session", "why", id); !strings.Contains(out, "can never fit this quota") {
		t.Errorf("why, over the whole quota:\n%s", out)
	}
	r := c.run(alice, "session", "create", "--image", "sleep", "--cpu", "2")
	if r.code == 0 || !strings.Contains(r.stderr, "resources.cpu") || !strings.Contains(r.stderr, "could never run") {
		t.Errorf("create over the quota: exit %d\nstderr: %s", r.code, r.stderr)
	}
	c.ok(alice, "session", "rm", id)
	if out := c.ok(alice, "session", "why", id); !strings.Contains(out, "session ended CANCELLED") ||
		!strings.Contains(out, "(cancelled): terminated by alice") {
		t.Errorf("why on an ended session:\n%s", out)
	}
}

// TestCLIWhyProgress: why explains a placed session that has not started.
func TestCLIWhyProgress(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	id := strings.Fields(c.ok(alice, "session", "create", "--image", apitest.SlowPull))[0]
	apitest.Eventually(t, 20*time.Second, "the session to be PREPARING", func() bool {
		var s v1.Session
		m.Do(alice, "GET", "/v1/sessions/"+id, nil, &s)
		return s.Status == "PREPARING"
	})
	out := c.ok(alice, "session", "why", id)
	for _, want := range []string{"session is PREPARING since", "15m0s bound", "waiting for image slow-pull to be pulled on agent"} {
		if !strings.Contains(out, want) {
			t.Errorf("why lacks %q:\n%s", want, out)
		}
	}
}

func TestCLIErrors(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	for _, tc := range []struct {
		name  string
		token string
		args  []string
		want  string
	}{
		{"unknown flag", alice, []string{"session", "create", "--image", "sleep", "--gpus", "1"}, "sokovan: unknown flag: --gpus"},
		{"negative quantity", alice, []string{"session", "create", "--image", "sleep", "--cpu=-1"},
			`sokovan: quantity "-1" is negative (field: resources.cpu)`},
		{"malformed quantity", alice, []string{"session", "create", "--image", "sleep", "--mem", "lots"}, "(field: resources.mem)"},
		{"unknown slot", alice, []string{"session", "create", "--image", "sleep", "--slot", "tpu=1"}, `unknown slot type "tpu"`},
		{"slot without a value", alice, []string{"session", "create", "--image", "sleep", "--slot", "cpu"}, "--slot wants NAME=VALUE"},
		{"cluster size not a number", alice, []string{"session", "create", "--image", "sleep", "--cluster-size", "two"}, `invalid argument "two"`},
		{"cluster size too big", alice, []string{"session", "create", "--image", "sleep", "--cluster-size", "65"}, "(field: cluster_size)"},
		{"no image", alice, []string{"session", "create"}, `required flag(s) "image" not set`},
		{"bad output", alice, []string{"session", "ls", "-o", "yaml"}, "unknown output format"},
		{"missing session", alice, []string{"session", "show", "nope"}, `sokovan: no session "nope"`},
		{"no token", "", []string{"session", "ls"}, "no token"},
		{"bad token", "skv_wrong", []string{"session", "ls"}, "sokovan: invalid token"},
		{"user on an admin verb", alice, []string{"agent", "cordon", "agent-0"}, "sokovan: only an admin may do this"},
		{"unknown sequencer", m.AdminToken, []string{"rg", "set", "default", "--sequencer", "random"}, "(field: sequencer)"},
		{"unknown timeout phase", m.AdminToken, []string{"rg", "set", "default", "--timeout", "running=1s"}, `unknown phase "running"`},
		{"bad timeout", m.AdminToken, []string{"rg", "set", "default", "--timeout", "pending=soon"}, "(field: timeouts.pending)"},
		{"zero time limit", alice, []string{"session", "create", "--image", "sleep", "--time-limit", "0s"}, "(field: time_limit)"},
		{"bad max time limit", m.AdminToken, []string{"rg", "set", "default", "--max-time-limit", "soon"}, "(field: max_time_limit)"},
		{"unknown head of line", m.AdminToken, []string{"rg", "set", "default", "--head-of-line", "later"}, "(field: head_of_line)"},
		{"negative reservation depth", m.AdminToken, []string{"rg", "set", "default", "--reservation-depth", "-1"}, "(field: reservation_depth)"},
	} {
		r := c.run(tc.token, tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want non-zero and %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
	if r := c.run(alice, "session", "ls"); r.code != 0 || strings.Contains(r.stdout, "PENDING") {
		t.Errorf("refused creates left sessions behind:\n%s", r.stdout)
	}
}

func TestCLILoginAndUsers(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	out := c.ok("", "login", "--token", m.AdminToken)
	if !strings.Contains(out, "as admin (admin)") {
		t.Errorf("login:\n%s", out)
	}
	path := filepath.Join(c.home, ".config", "sokovan", "config.json")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("config file mode %v, want 0600", perm)
	}
	// Later commands use the saved login; SOKOVAN_ADDR is still set by
	// run, so check the saved address too.
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), m.URL) {
		t.Errorf("saved config lacks the address: %s", raw)
	}
	out = c.ok("", "user", "create", "bob", "--project", "ml")
	if !strings.Contains(out, "token (shown only now): skv_") {
		t.Errorf("user create:\n%s", out)
	}
	bob := strings.TrimSpace(out[strings.LastIndex(out, "skv_"):])
	c.ok(bob, "session", "ls")
	var me struct{ Name, Project string }
	if err := json.Unmarshal([]byte(c.ok("", "login", "--token", bob, "-o", "json")), &me); err != nil || me.Name != "bob" || me.Project != "ml" {
		t.Errorf("login -o json as bob: %+v %v", me, err)
	}
	if r := c.run("", "login", "--token", "skv_wrong"); r.code == 0 || !strings.Contains(r.stderr, "invalid token") {
		t.Errorf("login with a bad token: exit %d %s", r.code, r.stderr)
	}
}

func TestCLICompletion(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if out := c.ok("", "completion", shell); !strings.Contains(out, "sokovan") {
			t.Errorf("completion %s printed %d bytes without the command's name", shell, len(out))
		}
	}
	// Cobra's hidden completion entry point lists the verbs.
	if out := c.ok("", "__complete", "session", ""); !strings.Contains(out, "create") || !strings.Contains(out, "why") {
		t.Errorf("completing session verbs:\n%s", out)
	}
}

// TestCLIWatch runs `session watch` as a user would: it prints a session's
// changes as they happen and exits 0 on Ctrl-C.
func TestCLIWatch(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p1")
	watch := exec.Command(binary, "session", "watch", "--kernels")
	watch.Env = []string{"HOME=" + c.home, "PATH=" + os.Getenv("PATH"), "SOKOVAN_ADDR=" + m.URL, "SOKOVAN_TOKEN=" + alice}
	var out lockedBuffer
	watch.Stdout, watch.Stderr = &out, &out
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	// The stream starts at "now": act once it is open.
	apitest.Eventually(t, 20*time.Second, "the watch to open its stream", func() bool {
		return strings.Contains(out.String(), "watching; Ctrl-C stops")
	})
	c.ok(bob, "session", "create", "--image", "sleep", "--name", "bobs")
	id := strings.Fields(c.ok(alice, "session", "create", "--image", "exit:0"))[0]
	apitest.Eventually(t, 20*time.Second, "the watch to print the session's end", func() bool {
		return strings.Contains(out.String(), id+"  TERMINATING → TERMINATED")
	})
	for _, want := range []string{id + "  new → PENDING", id + "  PENDING → SCHEDULED", "kernel " + id + "-k0 on agent-", "exit 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("watch output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "bobs") || strings.Count(out.String(), "new → PENDING") != 1 {
		t.Errorf("alice's watch shows another user's session:\n%s", out.String())
	}
	if err := watch.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("watch after Ctrl-C: %v\n%s", err, out.String())
	}
}

// TestCLISimulateFrom: simulate --from reads the live cluster through the
// API and estimates each pending session; one its quota never lets start
// gets none.
func TestCLISimulateFrom(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	// Larger than any schedulable agent: it waits, and the replay can give
	// it no start. (Admission refuses what no agent at all could hold, so a
	// cordoned agent that large keeps it admitted.)
	big, err := m.Slots.ParseSlots(map[string]string{"cpu": "1000", "mem": "64g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Store.RegisterAgent(t.Context(), domain.Agent{ID: "cordoned", ResourceGroup: "default",
		Address: "127.0.0.1:0", Architecture: "x86_64", Capacity: big}, time.Now()); err != nil {
		t.Fatal(err)
	}
	id := strings.Fields(c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "1000"))[0]
	out := c.ok(m.AdminToken, "simulate", "--from", m.URL)
	for _, want := range []string{"ESTIMATED START", id, "alice", "none (cannot start"} {
		if !strings.Contains(out, want) {
			t.Errorf("simulate --from lacks %q:\n%s", want, out)
		}
	}
}

// TestCLISimulateFromHoldsArrayCap: simulate --from replays an array's
// cap (%2) as the manager holds it: with elements 0 and 1 running for
// their 10-minute limits, element 2 is estimated to start when one ends,
// not at once, though the agent has room for it.
func TestCLISimulateFromHoldsArrayCap(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	body := map[string]any{"name": "sweep", "image": "sleep", "array": "0-3%2", "time_limit": "10m",
		"resources": map[string]string{"cpu": "1"}}
	if code := m.Do(alice, "POST", "/v1/arrays", body, nil); code != http.StatusCreated {
		t.Fatalf("create array: %d", code)
	}
	var a v1.Array
	apitest.Eventually(t, 20*time.Second, "two elements running", func() bool {
		m.Do(alice, "GET", "/v1/arrays/sweep", nil, &a)
		return a.Statuses["RUNNING"] == 2
	})
	started := time.Now()
	out := c.ok(m.AdminToken, "simulate", "--from", m.URL)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, a.Elements[2].ID) {
			line = l
		}
	}
	_, est, ok := strings.Cut(line, "~")
	est, _, _ = strings.Cut(est, " (estimate)")
	if !ok {
		t.Fatalf("simulate --from has no estimate for sweep[2]:\n%s", out)
	}
	at, err := time.ParseInLocation("15:04", est, time.Local)
	if err == nil {
		y, mo, d := started.Local().Date()
		at = time.Date(y, mo, d, at.Hour(), at.Minute(), 0, 0, time.Local)
	} else if at, err = time.ParseInLocation("2006-01-02 15:04", est, time.Local); err != nil {
		t.Fatalf("estimate of sweep[2] %q: %v", est, err)
	}
	// Printed to the minute: an element's limit runs out at least 9
	// minutes from now.
	if at.Before(started.Add(9 * time.Minute)) {
		t.Errorf("sweep[2] is estimated to start at %s, not when a running element's 10-minute limit runs out:\n%s", est, out)
	}
}

// TestCLITimeLimits: rg set sets a group's time limits and idle timeout,
// rg show shows them, and a session's --time-limit is held to the
// group's maximum and shown by session show.
func TestCLITimeLimits(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	out := c.ok(m.AdminToken, "rg", "set", "default", "--default-time-limit", "1h", "--max-time-limit", "4h", "--idle-timeout", "30m")
	if !strings.Contains(out, "Time limit:    default 3600s, max 14400s") || !strings.Contains(out, "Idle timeout:  1800s") {
		t.Errorf("rg set:\n%s", out)
	}
	if r := c.run(alice, "session", "create", "--image", "sleep", "--time-limit", "5h"); r.code == 0 ||
		!strings.Contains(r.stderr, "(field: time_limit)") || !strings.Contains(r.stderr, "at most") {
		t.Errorf("above the max: exit %d, stderr %q", r.code, r.stderr)
	}
	id := strings.Fields(c.ok(alice, "session", "create", "--image", "sleep", "--time-limit", "2h"))[0]
	if out := c.ok(alice, "session", "show", id); !strings.Contains(out, "Time limit: 7200s") {
		t.Errorf("show:\n%s", out)
	}
	id = strings.Fields(c.ok(alice, "session", "create", "--image", "sleep"))[0]
	if out := c.ok(alice, "session", "show", id); !strings.Contains(out, "Time limit: 3600s") {
		t.Errorf("show, the group default:\n%s", out)
	}
}
