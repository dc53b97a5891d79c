package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/manager"
	"github.com/sokovan-go/sokovan/internal/web"
)

// The test binary doubles as the http-echo kernel, as `sokovan` does.
func TestMain(m *testing.M) {
	if code, ok := process.RunChild(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// startDevDash runs `sokovan dev` in the test: a manager with the
// dashboard in front of its API, as cmd/sokovan's userAPI mounts it, and
// one agent whose kernels are real processes.
func startDevDash(t *testing.T) manager.DevInfo {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.DevConfig{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Agents: 1,
		AgentCapacity: map[string]string{"cpu": "8", "mem": "8g"}, SelfExe: self,
		Coordinator: coordinator.Config{ShortInterval: 50 * time.Millisecond},
		UserAPI: func(p manager.Parts, admin string) (http.Handler, error) {
			if err := api.EnsureAdmin(context.Background(), p.Store, admin); err != nil {
				return nil, err
			}
			return web.Mount(api.New(api.Config{}, api.Deps{Store: p.Store, Sessions: p.Coordinator, Slots: p.Slots,
				Plugins: p.Plugins, Hooks: p.Hooks, Admit: p.Admit, AgentRPC: p.Gateway, AgentToken: p.AgentToken,
				Logs: p.Agents.Logs})), nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan manager.DevInfo, 1)
	done := make(chan error, 1)
	go func() { done <- manager.RunDev(ctx, cfg, func(i manager.DevInfo) { ready <- i }) }()
	var info manager.DevInfo
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatalf("dev mode did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev mode stopped with %v", err)
		}
	})
	return info
}

// devDo calls the dev manager's API as its admin, answering the status
// and the body.
func devDo(t *testing.T, info manager.DevInfo, method, path string, body, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, info.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+info.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode, string(raw)
}

func devRunning(t *testing.T, info manager.DevInfo, req v1.CreateSessionRequest) v1.Session {
	t.Helper()
	var se v1.Session
	if code, body := devDo(t, info, "POST", "/v1/sessions", req, &se); code != http.StatusCreated {
		t.Fatalf("create %s: %d %s", req.Name, code, body)
	}
	apitest.Eventually(t, 60*time.Second, req.Name+" running", func() bool {
		devDo(t, info, "GET", "/v1/sessions/"+se.ID, nil, &se)
		return se.Status == "RUNNING"
	})
	return se
}

// TestDashboardDevLogsAndPort runs the two against real kernels: a
// command that prints a line every 200 ms is followed past what it had
// printed when the page opened, without "End of output." until it is
// cancelled; and http-echo's port opens in a new tab through the proxy,
// its echo showing that the kernel got neither the token nor the cookie.
func TestDashboardDevLogsAndPort(t *testing.T) {
	exe := chromium(t)
	info := startDevDash(t)
	ticker := devRunning(t, info, v1.CreateSessionRequest{Name: "ticker", Image: "sleep",
		Command: []string{"sh", "-c", `i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.2; done`}})
	echo := devRunning(t, info, v1.CreateSessionRequest{Name: "echo", Image: "http-echo", Type: "inference"})

	b := newBrowser(t, exe)
	b.login(t, info.URL, info.AdminToken, "admin")
	_, sofar := devDo(t, info, "GET", "/v1/sessions/"+ticker.ID+"/logs", nil, nil)
	later := fmt.Sprintf("tick %d\n", strings.Count(sofar, "\n")+5)
	b.go_(t, "#/sessions/"+ticker.ID, `document.getElementById('logs').textContent.includes('tick 1\n')`)
	for i := 0; ; i++ {
		state := eval[string](t, b, `document.getElementById('log-state').textContent`)
		if state == "End of output." {
			t.Fatalf("the running session's log says %q", state)
		}
		if eval[bool](t, b, fmt.Sprintf(`document.getElementById('logs').textContent.includes(%q)`, later)) {
			break
		}
		if i > 200 {
			t.Fatalf("after 20 s the log has no %q (state %q)", later, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.click(t, "cancel the ticker", "#cancel")
	b.waitJS(t, "the end of the output", `document.getElementById('main').dataset.status === 'TERMINATED' &&
		document.getElementById('log-state').textContent === 'End of output.'`)
	if _, all := devDo(t, info, "GET", "/v1/sessions/"+ticker.ID+"/logs", nil, nil); eval[string](t, b, `document.getElementById('logs').textContent`) != all {
		t.Errorf("the page's log differs from the kernel's:\n%s", all)
	}

	pp := echo.ServicePorts[0].ProxyPath
	b.go_(t, "#/sessions/"+echo.ID, `document.querySelector('#port-rows tr a') !== null`)
	opened := chromedp.WaitNewTarget(b.ctx, func(i *target.Info) bool { return strings.HasSuffix(i.URL, pp) })
	b.click(t, "open the port", `#port-rows tr a`)
	var tab target.ID
	select {
	case tab = <-opened:
	case <-time.After(15 * time.Second):
		t.Fatal("no tab opened for the port")
	}
	tctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(tab))
	defer cancel()
	var text string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, stop := context.WithTimeout(tctx, 5*time.Second)
		text, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
		stop()
		if strings.Contains(text, `"method"`) {
			break
		}
	}
	var got struct {
		Method  string      `json:"method"`
		Path    string      `json:"path"`
		Headers http.Header `json:"headers"`
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("the port's tab shows %q, not http-echo's answer: %v", text, err)
	}
	if got.Method != "GET" || got.Path != "/" || got.Headers.Get("Authorization") != "" ||
		strings.Contains(got.Headers.Get("Cookie"), "sokovan_proxy") {
		t.Errorf("http-echo saw %+v; want GET / without the token or the proxy cookie", got)
	}
}
