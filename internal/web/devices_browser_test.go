package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestDashboardDevices: the agents page shows each device of an agent
// that hands them out, free or held.
func TestDashboardDevices(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{Agents: 1, AgentDevices: "cuda:2"})
	var s v1.Session
	if code := d.Do(d.AdminToken, "POST", "/v1/sessions", v1.CreateSessionRequest{Image: "sleep",
		Resources: map[string]string{"cpu": "1", "mem": "1g", "cuda.device": "1"}}, &s); code != http.StatusCreated {
		t.Fatalf("session: status %d", code)
	}
	apitest.Eventually(t, 10*time.Second, "the session running", func() bool {
		var got v1.Session
		d.Do(d.AdminToken, "GET", "/v1/sessions/"+s.ID, nil, &got)
		return got.Status == "RUNNING"
	})
	b := newBrowser(t, exe)
	b.login(t, d.URL, d.AdminToken, "admin")
	b.go_(t, "#/agents", `document.querySelectorAll('#agent-rows tr .devices span').length === 2`)
	b.waitJS(t, "one device held, one free", `(() => {
		const t = [...document.querySelectorAll('#agent-rows tr .devices span')].map((e) => e.textContent).sort();
		return t[0] === 'cuda:0 held' && t[1] === 'cuda:1 free';
	})()`)
	b.checkLabels(t, "agents with devices")
}
