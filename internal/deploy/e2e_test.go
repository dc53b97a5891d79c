package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker/dockertest"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/api"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/deploy"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/manager"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/pgtest"
)

// The test binary doubles as the http-echo kernel, as `sokovan` does.
func TestMain(m *testing.M) {
	if code, ok := process.RunChild(os.Args[1:]); ok {
		os.Exit(code)
	}
	code := m.Run()
	dockertest.Close() // the images TestDeploymentOnDockerAgent pulled
	os.Exit(code)
}

// devEnv is `sokovan dev` in this process: a manager on SQLite, two
// process agents running real http-echo kernels, the real API, and the
// deployment controller with bounds short enough for a test.
type devEnv struct {
	t     testing.TB
	url   string
	token string
	parts manager.Parts
}

func startDev(t testing.TB) *devEnv {
	t.Helper()
	return startDevAgents(t, 2)
}

// startDevAgents is startDev with n process agents; with none, the test
// brings its own.
func startDevAgents(t testing.TB, n int) *devEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("starts dev mode with real kernels")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan manager.DevInfo, 1)
	done := make(chan error, 1)
	go func() {
		done <- manager.RunDev(ctx, manager.DevConfig{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Agents: n,
			AgentCapacity: map[string]string{"cpu": "8", "mem": "8g"}, SelfExe: self,
			Coordinator: coordinator.Config{ShortInterval: 50 * time.Millisecond},
			Deploy: deploy.Config{Interval: 100 * time.Millisecond, EvictionGrace: 300 * time.Millisecond,
				BackoffBase: 300 * time.Millisecond, BackoffMax: 1200 * time.Millisecond, DrainGrace: 400 * time.Millisecond},
			UserAPI: func(p manager.Parts, admin string) (http.Handler, error) {
				if err := api.EnsureAdmin(context.Background(), p.Store, admin); err != nil {
					return nil, err
				}
				srv := api.New(api.Config{}, api.Deps{Store: p.Store, Sessions: p.Coordinator, Slots: p.Slots,
					Plugins: p.Plugins, Hooks: p.Hooks, Admit: p.Admit, Deploy: p.Deploy, Registerer: p.Registerer, Gatherer: p.Gatherer,
					AgentRPC: p.Gateway, AgentToken: p.AgentToken})
				p.Deploy.UseLoad(srv)
				return srv, nil
			}}, func(i manager.DevInfo) { ready <- i })
	}()
	var info manager.DevInfo
	select {
	case info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("dev mode did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev mode stopped with %v", err)
		}
	})
	e := &devEnv{t: t, url: info.URL, token: info.AdminToken, parts: info.Parts}
	e.waitAlive(n)
	return e
}

// waitAlive waits until n agents are ALIVE.
func (e *devEnv) waitAlive(n int) {
	e.t.Helper()
	e.waitFor(20*time.Second, fmt.Sprintf("%d agents alive", n), func() (bool, string) {
		as, err := e.parts.Store.ListAgents(context.Background(), store.AgentFilter{Statuses: []domain.AgentStatus{domain.AgentAlive}})
		return err == nil && len(as) == n, fmt.Sprintf("%d agents", len(as))
	})
}

func (e *devEnv) call(method, path string, body, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	if resp.StatusCode >= 300 && out != nil {
		e.t.Logf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

func (e *devEnv) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
}

func (e *devEnv) show(id string) v1.Deployment {
	e.t.Helper()
	var d v1.Deployment
	if code := e.call("GET", "/v1/deployments/"+id, nil, &d); code != http.StatusOK {
		e.t.Fatalf("show %s: %d", id, code)
	}
	return d
}

func summary(d v1.Deployment) string {
	var parts []string
	for _, r := range d.Routes {
		parts = append(parts, fmt.Sprintf("%s:%s/%s(%s)", r.ID[:8], r.Status, r.SessionStatus, r.StatusReason))
	}
	return fmt.Sprintf("%s replicas=%d routes=[%s]", d.Status, d.Replicas, strings.Join(parts, " "))
}

// waitServing waits until the deployment is READY with n HEALTHY routes
// and nothing else.
func (e *devEnv) waitServing(id string, n int) v1.Deployment {
	e.t.Helper()
	var d v1.Deployment
	e.waitFor(30*time.Second, fmt.Sprintf("%s READY with %d HEALTHY routes", id, n), func() (bool, string) {
		d = e.show(id)
		if d.Status != "READY" || len(d.Routes) != n {
			return false, summary(d)
		}
		for _, r := range d.Routes {
			if r.Status != "HEALTHY" {
				return false, summary(d)
			}
		}
		return true, ""
	})
	return d
}

// through sends one GET through the deployment's proxy and returns the
// answering kernel, or the status when it failed.
func (e *devEnv) through(client *http.Client, id, path string) (kernel string, status int, err error) {
	req, _ := http.NewRequest("GET", e.url+"/v1/deployments/"+id+"/proxy"+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Kernel string `json:"kernel"`
		Path   string `json:"path"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, fmt.Errorf("%d: %s", resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return "", resp.StatusCode, err
	}
	if body.Path != path || resp.Header.Get(process.KernelHeader) != body.Kernel {
		return "", resp.StatusCode, fmt.Errorf("answer for path %q by %q (header %q), want path %q", body.Path,
			body.Kernel, resp.Header.Get(process.KernelHeader), path)
	}
	return body.Kernel, resp.StatusCode, nil
}

// echoPID finds the http-echo process serving endpoint among this
// machine's processes.
func echoPID(t testing.TB, endpoint string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) == 3 && args[1] == process.HTTPEchoArg && args[2] == endpoint {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return pid
		}
	}
	t.Fatalf("no http-echo process serves %s", endpoint)
	return 0
}

// checkReleased holds DESIGN.md's invariant 1 once everything ended:
// no agent has anything occupied.
func (e *devEnv) checkReleased() {
	e.t.Helper()
	e.waitFor(20*time.Second, "every slot released", func() (bool, string) {
		as, err := e.parts.Store.ListAgents(context.Background(), store.AgentFilter{})
		if err != nil {
			return false, err.Error()
		}
		for _, a := range as {
			if a.KernelCount != 0 || !a.Occupied.IsZero() {
				return false, fmt.Sprintf("agent %s holds %d kernels", a.ID, a.KernelCount)
			}
		}
		return true, ""
	})
}

func fastHealth() *v1.HealthCheck {
	return &v1.HealthCheck{Path: process.EchoHealthPath, Interval: "200ms", Timeout: "1s", InitialDelay: "0s",
		SuccessThreshold: 1, FailureThreshold: 2}
}

func intp(n int) *int { return &n }

func TestDeploymentServesHealsScalesAndIsDestroyed(t *testing.T) {
	e := startDev(t)
	var created v1.Deployment
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "echo", Image: "http-echo",
		Resources: map[string]string{"cpu": "1", "mem": "64m"}, Replicas: intp(3), HealthCheck: fastHealth()}, &created); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	id := created.ID
	d := e.waitServing("echo", 3)

	// Requests through the proxy reach all three replicas.
	client := &http.Client{Timeout: 5 * time.Second}
	seen := map[string]int{}
	for range 30 {
		k, _, err := e.through(client, id, "/v1/infer")
		if err != nil {
			t.Fatalf("through the proxy: %v", err)
		}
		seen[k]++
	}
	if len(seen) != 3 {
		t.Fatalf("30 requests reached kernels %v, want all 3 replicas", seen)
	}
	e.checkMetrics(id)

	// A client loop through the proxy runs across the kill below.
	var sent, failed atomic.Int64
	var failures sync.Map
	stop := make(chan struct{})
	var loop sync.WaitGroup
	loop.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _, err := e.through(client, id, "/loop")
			sent.Add(1)
			if err != nil {
				failures.Store(failed.Add(1), err.Error())
			}
			time.Sleep(5 * time.Millisecond)
		}
	})

	// SIGKILL one route's process: it leaves HEALTHY, is replaced, and
	// the deployment is back to 3 HEALTHY routes.
	victim := d.Routes[0]
	if err := syscall.Kill(echoPID(t, victim.Endpoint), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.waitFor(20*time.Second, "the killed route to leave HEALTHY", func() (bool, string) {
		d := e.show(id)
		for _, r := range d.Routes {
			if r.ID == victim.ID && r.Status == "HEALTHY" {
				return false, summary(d)
			}
		}
		return true, ""
	})
	d = e.waitServing(id, 3)
	for _, r := range d.Routes {
		if r.ID == victim.ID {
			t.Fatalf("the killed route %s is still a replica: %s", victim.ID, summary(d))
		}
	}
	close(stop)
	loop.Wait()
	// The bound the test holds: the retry on another route covers
	// connections refused; at most a request or two in flight on the
	// killed process when it died may fail.
	t.Logf("client loop during the kill: %d requests, %d failed", sent.Load(), failed.Load())
	if failed.Load() > 3 {
		var msgs []string
		failures.Range(func(_, v any) bool { msgs = append(msgs, v.(string)); return true })
		t.Errorf("%d of %d requests failed through the kill, want at most 3: %v", failed.Load(), sent.Load(), msgs)
	}

	// A sick route (health path failing, process alive) is evicted and
	// replaced.
	sick := d.Routes[1]
	resp, err := http.Post("http://"+sick.Endpoint+process.EchoSickPath, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	pid := echoPID(t, sick.Endpoint)
	e.waitFor(20*time.Second, "the sick route to be evicted", func() (bool, string) {
		var hs v1.List[v1.DeploymentHistory]
		e.call("GET", "/v1/deployments/"+id+"/history", nil, &hs)
		for _, h := range hs.Items {
			if h.Route == sick.ID && h.Handler == string(domain.HandlerRouteEviction) && h.To == "TERMINATING" {
				return true, ""
			}
		}
		return false, summary(e.show(id))
	})
	// It was evicted for its health alone: its process was alive until
	// the eviction ended its session.
	var hs v1.List[v1.DeploymentHistory]
	e.call("GET", "/v1/deployments/"+id+"/history", nil, &hs)
	sawUnhealthy := false
	for _, h := range hs.Items {
		if h.Route == sick.ID && h.Handler == string(domain.HandlerHealthCheckRoute) && h.To == "UNHEALTHY" {
			sawUnhealthy = true
		}
	}
	if !sawUnhealthy {
		t.Errorf("sick route %s was not UNHEALTHY before eviction; history: %+v", sick.ID, hs.Items)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		// Still alive is fine too: the session's end may not have
		// reached the process yet. What matters is that it was alive
		// while it was evicted, checked next.
		t.Logf("sick process %d still alive right after eviction", pid)
	}
	e.waitServing(id, 3)

	// Scale 3 → 5 → 1.
	for _, n := range []int{5, 1} {
		if code := e.call("PATCH", "/v1/deployments/"+id, v1.UpdateDeploymentRequest{Replicas: intp(n)}, &v1.Deployment{}); code != http.StatusOK {
			t.Fatalf("scale to %d: %d", n, code)
		}
		e.waitServing(id, n)
	}
	if code := e.call("PATCH", "/v1/deployments/"+id, v1.UpdateDeploymentRequest{Replicas: intp(-1)}, nil); code != http.StatusBadRequest {
		t.Errorf("replicas -1: %d, want 400", code)
	}

	// Destroy: DESTROYED, every route's session ended, every slot free.
	if code := e.call("DELETE", "/v1/deployments/"+id, nil, &v1.Deployment{}); code != http.StatusAccepted {
		t.Fatalf("destroy: %d", code)
	}
	e.waitFor(30*time.Second, "DESTROYED", func() (bool, string) {
		d := e.show(id)
		return d.Status == "DESTROYED" && len(d.Routes) == 0, summary(d)
	})
	if code := e.call("GET", "/v1/deployments/"+id+"/proxy/x", nil, nil); code != http.StatusServiceUnavailable {
		t.Errorf("proxy of a destroyed deployment: %d, want 503", code)
	}
	sessions, err := e.parts.Store.ListSessions(context.Background(), store.SessionFilter{Types: []domain.SessionType{domain.TypeInference}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) < 5 {
		t.Errorf("only %d inference sessions were made", len(sessions))
	}
	for _, s := range sessions {
		if !s.Status.Terminal() {
			t.Errorf("session %s is %s after destroy", s.ID, s.Status)
		}
	}
	e.checkReleased()
}

func TestDeploymentThatCannotStartBacksOffOrWaitsWithBlockers(t *testing.T) {
	e := startDev(t)
	// An image that exits at once: every route fails to start.
	var bad v1.Deployment
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "crash", Image: "exit:1",
		Env: map[string]string{"SOKOVAN_EXIT_AFTER": "0"}, Replicas: intp(2), HealthCheck: fastHealth()}, &bad); code != http.StatusCreated {
		t.Fatalf("create crash: %d", code)
	}
	// A replica larger than any agent that runs waits PENDING. Admission
	// refuses one that no agent could ever hold, so a cordoned agent large
	// enough makes it one that might yet run.
	big, err := e.parts.Slots.ParseSlots(map[string]string{"cpu": "64", "mem": "64g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.parts.Store.RegisterAgent(t.Context(), domain.Agent{ID: "cordoned", ResourceGroup: "default",
		Address: "127.0.0.1:0", Architecture: "x86_64", Runtime: "process", Capacity: big}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var huge v1.Deployment
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "huge", Image: "http-echo",
		Resources: map[string]string{"cpu": "64"}, Replicas: intp(1), HealthCheck: fastHealth()}, &huge); code != http.StatusCreated {
		t.Fatalf("create huge: %d", code)
	}
	start := time.Now()
	e.waitFor(20*time.Second, "crash to back off after 5 failed starts", func() (bool, string) {
		d := e.show(bad.ID)
		return d.StartFailures >= 5 && d.NextStartAt != nil, summary(d) + fmt.Sprintf(" failures=%d", d.StartFailures)
	})
	elapsed := time.Since(start)
	d := e.show(bad.ID)
	if d.Status != "SCALING" {
		t.Errorf("crash is %s, want SCALING", d.Status)
	}
	var hs v1.List[v1.DeploymentHistory]
	e.call("GET", "/v1/deployments/"+bad.ID+"/history", nil, &hs)
	// A route of this image fails either before its session runs
	// (FAILED_TO_START) or just after, before it ever served (DEGRADED →
	// TERMINATING): both are failed starts, depending on when the exit is
	// seen, and the deployment's own count has them all.
	created, failedStarts := 0, d.StartFailures
	for _, h := range hs.Items {
		if h.Handler == string(domain.HandlerScalingDeployment) && h.To == "PROVISIONING" {
			created++
		}
	}
	t.Logf("crash: %d routes created, %d failed to start in %s", created, failedStarts, elapsed)
	// Without backoff two replicas at a 100 ms pass would make dozens;
	// after the first two, one route at a time waits 0.3, 0.6, 1.2 s.
	if failedStarts < 5 || created > failedStarts+2 {
		t.Errorf("%d routes created for %d failed starts; want the starts to back off", created, failedStarts)
	}
	// Backoff 300 ms doubling, capped at 1.2 s. The two first routes may
	// fail in either order around a third, but the fourth and fifth each
	// wait 1.2 s after the failure before them: at least 2.4 s in all,
	// where an unthrottled loop at a 100 ms pass would take well under one.
	if elapsed < 2400*time.Millisecond {
		t.Errorf("5 failed starts within %s; the backoff should have spaced them over at least 2.4 s", elapsed)
	}

	h := e.show(huge.ID)
	if h.Status != "SCALING" || len(h.Routes) != 1 || h.Routes[0].Status != "PROVISIONING" {
		t.Fatalf("huge: %s, want SCALING with one PROVISIONING route", summary(h))
	}
	blocked := false
	for _, b := range h.Routes[0].Blockers {
		if b.Kind == "capacity" && b.Slot == "cpu" {
			blocked = true
		}
	}
	if !blocked {
		t.Errorf("huge's route carries blockers %+v, want a cpu capacity blocker", h.Routes[0].Blockers)
	}

	for _, id := range []string{bad.ID, huge.ID} {
		if code := e.call("DELETE", "/v1/deployments/"+id, nil, &v1.Deployment{}); code != http.StatusAccepted {
			t.Fatalf("destroy %s: %d", id, code)
		}
		e.waitFor(30*time.Second, id+" DESTROYED", func() (bool, string) {
			d := e.show(id)
			return d.Status == "DESTROYED", summary(d)
		})
	}
	e.checkReleased()
}

func TestCreateDeploymentRefusesBadInputNamingTheField(t *testing.T) {
	e := startDev(t)
	for _, tc := range []struct {
		name string
		req  v1.CreateDeploymentRequest
	}{
		{"no name", v1.CreateDeploymentRequest{Image: "http-echo"}},
		{"no image", v1.CreateDeploymentRequest{Name: "a"}},
		{"unknown image", v1.CreateDeploymentRequest{Name: "a", Image: "nope"}},
		{"replicas", v1.CreateDeploymentRequest{Name: "a", Image: "http-echo", Replicas: intp(65)}},
		{"interval", v1.CreateDeploymentRequest{Name: "a", Image: "http-echo", HealthCheck: &v1.HealthCheck{Interval: "soon"}}},
		{"threshold", v1.CreateDeploymentRequest{Name: "a", Image: "http-echo", HealthCheck: &v1.HealthCheck{FailureThreshold: -1}}},
		{"resources", v1.CreateDeploymentRequest{Name: "a", Image: "http-echo", Resources: map[string]string{"cpu": "lots"}}},
	} {
		if code := e.call("POST", "/v1/deployments", tc.req, nil); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", tc.name, code)
		}
	}
	var list v1.List[v1.Deployment]
	e.call("GET", "/v1/deployments?all=true", nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("refused requests left deployments: %+v", list.Items)
	}
}

// clientLoop sends GETs through the deployment's proxy until stopped and
// counts the failures.
type clientLoop struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	sent     atomic.Int64
	mu       sync.Mutex
	failures []string
	kernels  map[string]int
}

func (e *devEnv) loop(id string) *clientLoop {
	l := &clientLoop{stop: make(chan struct{}), kernels: map[string]int{}}
	client := &http.Client{Timeout: 5 * time.Second}
	l.wg.Go(func() {
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			k, _, err := e.through(client, id, "/loop")
			l.sent.Add(1)
			l.mu.Lock()
			if err != nil {
				l.failures = append(l.failures, err.Error())
			} else {
				l.kernels[k]++
			}
			l.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	})
	return l
}

func (l *clientLoop) end() (sent int64, failures []string) {
	close(l.stop)
	l.wg.Wait()
	return l.sent.Load(), l.failures
}

func TestRollingUpdateServesEveryRequestAndAFailedOneRollsBack(t *testing.T) {
	e := startDev(t)
	var d v1.Deployment
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "roll", Image: "http-echo",
		Resources: map[string]string{"cpu": "1", "mem": "64m"}, Replicas: intp(3), HealthCheck: fastHealth()}, &d); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	first := e.waitServing(d.ID, 3)
	oldRoutes := map[string]bool{}
	for _, r := range first.Routes {
		oldRoutes[r.ID] = true
	}

	l := e.loop(d.ID)
	var patched v1.Deployment
	if code := e.call("PATCH", "/v1/deployments/"+d.ID, v1.UpdateDeploymentRequest{Env: map[string]string{"MODEL": "v2"}}, &patched); code != http.StatusOK {
		t.Fatalf("update: %d", code)
	}
	if patched.Status != "DEPLOYING" || patched.Revision != 2 {
		t.Fatalf("after the update: %s revision %d, want DEPLOYING revision 2", patched.Status, patched.Revision)
	}
	if code := e.call("PATCH", "/v1/deployments/"+d.ID, v1.UpdateDeploymentRequest{Image: "sleep"}, nil); code != http.StatusConflict {
		t.Errorf("a second spec change during a rollout: %d, want 409", code)
	}
	var after v1.Deployment
	e.waitFor(40*time.Second, "revision 2 on every replica", func() (bool, string) {
		after = e.waitServing(d.ID, 3)
		for _, r := range after.Routes {
			if r.Revision != 2 || oldRoutes[r.ID] {
				return false, summary(after)
			}
		}
		return after.Revision == 2, summary(after)
	})
	sent, failures := l.end()
	t.Logf("rolling update: %d requests through the proxy, %d failed", sent, len(failures))
	if len(failures) != 0 {
		t.Errorf("%d of %d requests failed during the rolling update: %v", len(failures), sent, failures)
	}

	// A rollout whose new routes cannot start stops; revision 2 keeps
	// serving, every request answered.
	l = e.loop(d.ID)
	if code := e.call("PATCH", "/v1/deployments/"+d.ID, v1.UpdateDeploymentRequest{Image: "exit:1",
		Env: map[string]string{"SOKOVAN_EXIT_AFTER": "0"}}, &patched); code != http.StatusOK {
		t.Fatalf("bad update: %d", code)
	}
	e.waitFor(30*time.Second, "the failed rollout to stop", func() (bool, string) {
		var hs v1.List[v1.DeploymentHistory]
		e.call("GET", "/v1/deployments/"+d.ID+"/history", nil, &hs)
		for _, h := range hs.Items {
			if h.Handler == string(domain.HandlerRolloutDeployment) && h.Result == "FAILURE" {
				return true, h.Message
			}
		}
		return false, summary(e.show(d.ID))
	})
	back := e.waitServing(d.ID, 3)
	sent, failures = l.end()
	t.Logf("failed rollout: %d requests through the proxy, %d failed", sent, len(failures))
	if len(failures) != 0 {
		t.Errorf("%d of %d requests failed during the failed rollout: %v", len(failures), sent, failures)
	}
	if back.Revision != 2 || back.Image != "http-echo" || back.Env["MODEL"] != "v2" {
		t.Errorf("after the failed rollout: revision %d image %s env %v, want revision 2's spec back", back.Revision, back.Image, back.Env)
	}
	for _, r := range back.Routes {
		if r.Revision != 2 {
			t.Errorf("route %s runs revision %d after the rollback", r.ID, r.Revision)
		}
	}
	if code := e.call("DELETE", "/v1/deployments/"+d.ID, nil, &v1.Deployment{}); code != http.StatusAccepted {
		t.Fatalf("destroy: %d", code)
	}
	e.waitFor(30*time.Second, "DESTROYED", func() (bool, string) {
		d := e.show(d.ID)
		return d.Status == "DESTROYED", summary(d)
	})
	e.checkReleased()
}

func (e *devEnv) proxyAs(token, ref string) int {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url+"/v1/deployments/"+ref+"/proxy/x", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestDeploymentTokensOpenOnlyTheirDeploymentsProxy(t *testing.T) {
	e := startDev(t)
	var a, b v1.Deployment
	for name, d := range map[string]*v1.Deployment{"a": &a, "b": &b} {
		if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: name, Image: "http-echo",
			Resources: map[string]string{"cpu": "1", "mem": "64m"}, HealthCheck: fastHealth()}, d); code != http.StatusCreated {
			t.Fatalf("create %s: %d", name, code)
		}
	}
	e.waitServing("a", 1)
	e.waitServing("b", 1)
	var tok v1.DeploymentToken
	if code := e.call("POST", "/v1/deployments/a/tokens", nil, &tok); code != http.StatusCreated || !strings.HasPrefix(tok.Token, api.DeploymentTokenPrefix) {
		t.Fatalf("create token: %d %+v", code, tok)
	}
	var other v1.NewUser
	if code := e.call("POST", "/v1/users", v1.CreateUserRequest{Name: "bob"}, &other); code != http.StatusCreated {
		t.Fatalf("create user: %d", code)
	}
	for _, tc := range []struct {
		name, token, ref string
		want             int
	}{
		{"owner", e.token, "a", http.StatusOK},
		{"token, by name", tok.Token, "a", http.StatusOK},
		{"token, by id", tok.Token, a.ID, http.StatusOK},
		{"token, another deployment", tok.Token, "b", http.StatusNotFound},
		{"another user", other.Token, "a", http.StatusNotFound},
		{"no such token", "skvd_nope", "a", http.StatusUnauthorized},
	} {
		if got := e.proxyAs(tc.token, tc.ref); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// The token opens the proxy and nothing else.
	req, _ := http.NewRequest("GET", e.url+"/v1/deployments/a", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("deployment token on GET /v1/deployments/a: %v %v, want 401", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	if code := e.call("DELETE", "/v1/deployments/a/tokens/"+tok.ID, nil, &v1.DeploymentToken{}); code != http.StatusOK {
		t.Fatalf("revoke: %d", code)
	}
	time.Sleep(api.ProxyCacheTTL) // the bound a manager may still trust it for
	if got := e.proxyAs(tok.Token, "a"); got != http.StatusUnauthorized {
		t.Errorf("revoked token: %d, want 401", got)
	}
	if code := e.call("DELETE", "/v1/deployments/a/tokens/"+tok.ID, nil, nil); code != http.StatusConflict {
		t.Errorf("revoke twice: %d, want 409", code)
	}
	var list v1.List[v1.DeploymentToken]
	e.call("GET", "/v1/deployments/a/tokens", nil, &list)
	if len(list.Items) != 1 || list.Items[0].RevokedAt == nil || list.Items[0].Token != "" {
		t.Errorf("token list %+v, want the one token, revoked, without its secret", list.Items)
	}
}

// checkMetrics reads /metrics: routes by status, proxied requests and
// health checks are there for the deployment.
func (e *devEnv) checkMetrics(id string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.url+"/metrics", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token) // an admin sees the per-deployment series
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(raw)
	for _, want := range []string{
		`sokovan_deployment_routes{deployment="` + id + `",status="HEALTHY"} 3`,
		`sokovan_deployment_proxy_requests_total{code="200",deployment="` + id + `"}`,
		`sokovan_deployment_proxy_duration_seconds_count{code="200",deployment="` + id + `"}`,
		`sokovan_route_health_checks_total{result="success"}`,
		`sokovan_route_health_check_duration_seconds_count`,
	} {
		if !strings.Contains(text, want) {
			e.t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestTwoManagersBothProxy runs two managers on one PostgreSQL database
// with two process agents: one manager holds the lease and drives the
// deployment, and both proxy to its routes.
func TestTwoManagersBothProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two managers with real kernels")
	}
	dsn := pgtest.NewDatabase(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	admin := api.NewToken()
	var ms []*manager.Manager
	for range 2 {
		m, err := manager.Open(ctx, manager.Config{DB: dsn, Listen: "127.0.0.1:0", AgentToken: "tok",
			Coordinator: coordinator.Config{ShortInterval: 50 * time.Millisecond},
			Deploy:      deploy.Config{Interval: 100 * time.Millisecond, DrainGrace: 400 * time.Millisecond},
			UserAPI: func(p manager.Parts) (http.Handler, error) {
				if err := api.EnsureAdmin(context.Background(), p.Store, admin); err != nil {
					return nil, err
				}
				srv := api.New(api.Config{}, api.Deps{Store: p.Store, Sessions: p.Coordinator, Slots: p.Slots,
					Plugins: p.Plugins, Hooks: p.Hooks, Admit: p.Admit, Deploy: p.Deploy, AgentRPC: p.Gateway, AgentToken: p.AgentToken})
				p.Deploy.UseLoad(srv)
				return srv, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
		wg.Go(func() { _ = m.Run(ctx) })
	}
	for i := range 2 {
		a, err := agent.New(agent.Config{ID: domain.AgentID(fmt.Sprintf("agent-%d", i)), ResourceGroup: "default",
			Manager: ms[0].URL(), Token: "tok", Listen: "127.0.0.1:0", Capacity: map[string]string{"cpu": "8", "mem": "8g"},
			Runtime: "process", HeartbeatInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := process.New(process.Config{DataDir: t.TempDir(), Catalog: process.DefaultCatalog(self), Sink: a.Sink})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = a.Run(ctx, rt) })
	}
	envs := []*devEnv{{t: t, url: ms[0].URL(), token: admin, parts: ms[0].Parts}, {t: t, url: ms[1].URL(), token: admin, parts: ms[1].Parts}}
	envs[0].waitFor(20*time.Second, "both agents alive", func() (bool, string) {
		as, err := ms[0].Store.ListAgents(ctx, store.AgentFilter{Statuses: []domain.AgentStatus{domain.AgentAlive}})
		return err == nil && len(as) == 2, fmt.Sprintf("%d agents", len(as))
	})
	var d v1.Deployment
	if code := envs[1].call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "both", Image: "http-echo",
		Resources: map[string]string{"cpu": "1", "mem": "64m"}, Replicas: intp(2), HealthCheck: fastHealth()}, &d); code != http.StatusCreated {
		t.Fatalf("create through the second manager: %d", code)
	}
	envs[0].waitServing(d.ID, 2)
	client := &http.Client{Timeout: 5 * time.Second}
	for i, e := range envs {
		seen := map[string]bool{}
		for range 20 {
			k, _, err := e.through(client, d.ID, "/p")
			if err != nil {
				t.Fatalf("through manager %d: %v", i, err)
			}
			seen[k] = true
		}
		if len(seen) != 2 {
			t.Errorf("manager %d's proxy reached %d kernels, want both replicas", i, len(seen))
		}
	}
	if code := envs[0].call("DELETE", "/v1/deployments/"+d.ID, nil, &v1.Deployment{}); code != http.StatusAccepted {
		t.Fatalf("destroy: %d", code)
	}
	envs[1].waitFor(30*time.Second, "DESTROYED", func() (bool, string) {
		d := envs[1].show(d.ID)
		return d.Status == "DESTROYED", summary(d)
	})
	envs[0].checkReleased()
}

func TestAutoscalingFollowsRequestsInFlight(t *testing.T) {
	e := startDev(t)
	var d v1.Deployment
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "auto", Image: "http-echo",
		Resources: map[string]string{"cpu": "1", "mem": "64m"}, HealthCheck: fastHealth(),
		Autoscale: &v1.Autoscale{Min: 1, Max: 3, Target: "2", Cooldown: "1s"}}, &d); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	e.waitServing(d.ID, 1)
	// Six clients each keep a 300 ms request in flight: about 6 in flight,
	// 2 per route wanted, so 3 routes.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Int64
	client := &http.Client{Timeout: 5 * time.Second}
	for range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := e.through(client, d.ID, "/slow?sleep=300ms"); err != nil {
					if !strings.Contains(err.Error(), "answer for path") {
						failed.Add(1)
					}
				}
			}
		})
	}
	e.waitFor(30*time.Second, "scaled out to 3", func() (bool, string) {
		d := e.show(d.ID)
		return d.Replicas == 3 && healthy(d) == 3, summary(d)
	})
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d requests failed while scaling out", n)
	}
	e.waitFor(30*time.Second, "scaled back in to 1", func() (bool, string) {
		d := e.show(d.ID)
		return d.Replicas == 1 && d.Status == "READY" && len(d.Routes) == 1, summary(d)
	})
	var hs v1.List[v1.DeploymentHistory]
	e.call("GET", "/v1/deployments/"+d.ID+"/history", nil, &hs)
	var decisions []string
	for _, h := range hs.Items {
		if h.Handler == string(domain.HandlerAutoscaleDeployment) {
			decisions = append(decisions, h.Message)
		}
	}
	t.Logf("autoscaling decisions: %q", decisions)
	if len(decisions) < 2 {
		t.Errorf("history holds %d autoscaling decisions, want the scale-out and the scale-in", len(decisions))
	}
}

func healthy(d v1.Deployment) int {
	n := 0
	for _, r := range d.Routes {
		if r.Status == "HEALTHY" {
			n++
		}
	}
	return n
}
