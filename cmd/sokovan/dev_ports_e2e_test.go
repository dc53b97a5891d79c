package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func (d *devBinary) session(token, id string) v1.Session {
	d.t.Helper()
	out, code := d.cli(token, "session", "show", id, "-o", "json")
	var s v1.Session
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		d.t.Fatalf("show %s: exit %d\n%s", id, code, out)
	}
	return s
}

var createdID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// create submits a session and returns its id.
func (d *devBinary) create(args ...string) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// -o json: the session on stdout, --wait's progress on stderr.
	cmd := exec.CommandContext(ctx, binary, append([]string{"session", "create", "-o", "json"}, args...)...)
	cmd.Env = d.env(d.token)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var s v1.Session
	if err != nil || json.Unmarshal(out, &s) != nil || s.ID == "" {
		d.t.Fatalf("create %v: %v\n%s%s", args, err, out, stderr.String())
	}
	return s.ID
}

// TestDevModeRunsUsersCommandAndFollowsLogs: dev mode runs a session's own
// command, and `logs -f` prints its output as it comes and returns once
// the session has ended; the catalog images say what they do in their logs.
func TestDevModeRunsUsersCommandAndFollowsLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev mode with real kernels")
	}
	d := startDevBinary(t, 1)
	id := d.create("--image", "sleep", "--name", "mine", "--", "sh", "-c", "echo hello; sleep 2; echo bye")
	start := time.Now()
	out, code := d.cli(d.token, "session", "logs", "-f", "--poll", "100ms", id)
	if code != 0 || !strings.Contains(out, "hello\n") || !strings.Contains(out, "bye\n") {
		t.Fatalf("logs -f: exit %d\n%s", code, out)
	}
	if strings.Count(out, "hello") != 1 {
		t.Errorf("logs -f printed a line twice:\n%s", out)
	}
	if s := d.session(d.token, id); s.Status != "TERMINATED" || s.Outcome != "success" {
		t.Errorf("after logs -f returned, session is %s (%s); want TERMINATED with success", s.Status, s.Outcome)
	}
	if time.Since(start) < 2*time.Second {
		t.Errorf("logs -f returned after %v, before the command could have ended", time.Since(start))
	}

	ex := d.create("--image", "exit:3", "--env", "SOKOVAN_EXIT_AFTER=0.2", "--name", "three")
	if out, code := d.cli(d.token, "session", "logs", "-f", "--poll", "100ms", ex); code != 0 ||
		!strings.Contains(out, "exit:3: exiting with 3 after 0.2s") {
		t.Errorf("logs of exit:3: exit %d\n%s", code, out)
	}
	sl := d.create("--image", "sleep", "--name", "sleeper", "--wait")
	if out, _ := d.cli(d.token, "session", "logs", sl); !strings.Contains(out, "sleep: sleeping until the session is terminated") {
		t.Errorf("logs of sleep:\n%s", out)
	}
}

// TestDevModeServicePortProxy: an http-echo session's port is shown by
// `show` and the API, served through the manager's proxy to its owner (and
// 404 to another user), and through `port-forward`.
func TestDevModeServicePortProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev mode with real kernels")
	}
	d := startDevBinary(t, 1)
	id := d.create("--image", "http-echo", "--type", "inference", "--name", "echo", "--wait")
	s := d.session(d.token, id)
	if len(s.ServicePorts) != 1 {
		t.Fatalf("service_ports = %+v; want one", s.ServicePorts)
	}
	p := s.ServicePorts[0]
	if p.Name != "http" || p.Protocol != "http" || p.Kernel != s.Kernels[0].ID || p.Port == 0 ||
		p.ProxyPath != "/v1/sessions/"+id+"/proxy/http/" {
		t.Errorf("service port = %+v", p)
	}
	if out, _ := d.cli(d.token, "session", "show", id); !strings.Contains(out, p.ProxyPath) ||
		!strings.Contains(out, net.JoinHostPort(p.Host, strconv.Itoa(p.Port))) {
		t.Errorf("show does not list the port:\n%s", out)
	}

	get := func(url, token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &body)
		return resp.StatusCode, body
	}
	code, echoed := get(d.url+p.ProxyPath+"hello?x=1", d.token)
	if code != http.StatusOK || echoed["path"] != "/hello" || echoed["query"] != "x=1" {
		t.Fatalf("through the proxy: %d %v", code, echoed)
	}
	if h, _ := echoed["headers"].(map[string]any); h["Authorization"] != nil {
		t.Errorf("the proxy passed the caller's token on to the kernel: %v", h)
	}
	if code, _ := get(d.url+p.ProxyPath, ""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", code)
	}
	out, c := d.cli(d.token, "user", "create", "bob")
	m := regexp.MustCompile(`token \(shown only now\): (\S+)`).FindStringSubmatch(out)
	if c != 0 || m == nil {
		t.Fatalf("user create: exit %d\n%s", c, out)
	}
	if code, _ := get(d.url+p.ProxyPath+"hello", m[1]); code != http.StatusNotFound {
		t.Errorf("another user through the proxy: %d, want 404", code)
	}
	if code, _ := get(d.url+"/v1/sessions/"+id+"/proxy/nope/", d.token); code != http.StatusNotFound {
		t.Errorf("an unknown port: %d, want 404", code)
	}

	// port-forward listens locally and goes through the same proxy.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pf := exec.CommandContext(ctx, binary, "session", "port-forward", id, "0:http")
	pf.Env = d.env(d.token)
	stdout, err := pf.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pf.Stderr = pf.Stdout
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	local := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if err != nil || local == "" {
		t.Fatalf("port-forward said %q (%v)", line, err)
	}
	code, echoed = get(local+"/via/forward", "")
	if code != http.StatusOK || echoed["path"] != "/via/forward" {
		t.Errorf("through port-forward: %d %v", code, echoed)
	}
	cancel()
	_ = pf.Wait()

	if out, _ := d.cli(d.token, "session", "logs", id); !strings.Contains(out, "http-echo: listening on http://") ||
		!strings.Contains(out, "GET /hello?x=1") || !strings.Contains(out, "GET /via/forward") {
		t.Errorf("http-echo's log:\n%s", out)
	}
}
