package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestDashboardAgentDrain: an admin drains the agent running carol's
// session from the agents page. A deadline the API refuses shows beside
// the field and drains nothing; with 5s the row shows the drain with one
// kernel left and when they end, then, once the manager has ended the
// session at the deadline, the agent drained. Uncordon ends the drain.
func TestDashboardAgentDrain(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{})
	carol := d.User("carol", "user", "p1")
	var s v1.Session
	if code := d.Do(carol, "POST", "/v1/sessions", v1.CreateSessionRequest{Image: "sleep",
		Resources: map[string]string{"cpu": "1", "mem": "1g"}}, &s); code != http.StatusCreated {
		t.Fatalf("session: status %d", code)
	}
	var agent string
	apitest.Eventually(t, 10*time.Second, "the session running", func() bool {
		d.Do(carol, "GET", "/v1/sessions/"+s.ID, nil, &s)
		if s.Status == "RUNNING" && len(s.Kernels) == 1 {
			agent = s.Kernels[0].Agent
		}
		return agent != ""
	})

	b := newBrowser(t, exe)
	b.login(t, d.URL, d.AdminToken, "admin")
	b.go_(t, "#/agents", `document.querySelectorAll('#agent-rows tr').length === 2 && document.getElementById('drain-agent').options.length === 2`)
	b.checkLabels(t, "agents with the drain form")
	row := fmt.Sprintf(`#agent-rows tr[data-id=%q]`, agent)
	// The row's Drain… hands the agent to the form and the focus to its
	// deadline, so a keyboard user types it next.
	b.click(t, "Drain… on the agent", row+` button[data-verb=drain]`)
	type formT struct {
		Agent string `json:"agent"`
		Focus string `json:"focus"`
	}
	if f := eval[formT](t, b, `({agent: document.getElementById('drain-agent').value, focus: document.activeElement.id})`); f.Agent != agent || f.Focus != "drain-deadline" {
		t.Errorf("after Drain…: %+v; want the form on %s with the deadline focused", f, agent)
	}
	b.run(t, "a bad deadline", chromedp.KeyEvent("soon"+kb.Enter))
	b.waitJS(t, "the deadline's error", `!document.getElementById('drain-deadline-error').hidden`)
	var a v1.Agent
	if d.Do(d.AdminToken, "GET", "/v1/agents/"+agent, nil, &a); !a.Schedulable || a.Drain != nil {
		t.Fatalf("a refused drain changed the agent: %+v", a)
	}
	b.shot(t, "drain-error")

	b.run(t, "drain with 5s", chromedp.SetValue(chromedp.ID("drain-deadline"), "5s"),
		chromedp.Click(chromedp.CSS(`#drain-form button[type=submit]`)))
	b.waitJS(t, "draining with one kernel left", `document.querySelector('`+row+`').dataset.remaining === '1' &&
		document.querySelector('`+row+` td.placement').textContent.includes('1 kernel left')`)
	if text := eval[string](t, b, `document.querySelector('`+row+` td.placement').textContent`); !strings.Contains(text, "ends at") {
		t.Errorf("placement = %q; want when the deadline ends what remains", text)
	}
	b.shot(t, "draining")
	// The coordinator's sweep, which ends what a drain leaves at its
	// deadline, runs on a long interval; the test runs it once the
	// deadline has passed rather than wait for it.
	apitest.Eventually(t, 15*time.Second, "the sweep ends carol's session after the deadline", func() bool {
		if err := d.Coordinator.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
		d.Do(carol, "GET", "/v1/sessions/"+s.ID, nil, &s)
		return s.Status == "TERMINATED"
	})
	b.waitJS(t, "drained after the deadline", `document.querySelector('`+row+`').dataset.drained === 'true' &&
		document.querySelector('`+row+` td.placement').textContent.includes('drained')`)
	b.shot(t, "drained")
	b.click(t, "uncordon", row+` button[data-verb=uncordon]`)
	b.waitJS(t, "schedulable, no drain", `(() => { const r = document.querySelector('`+row+`');
		return r.dataset.schedulable === 'true' && r.dataset.remaining === undefined; })()`)
}

// TestDashboardGroupState: an admin stops and starts a group with its
// buttons, sets head of line reserve with a reservation depth of 3, then
// drains it; a move back from DRAINING is refused by the API with 409 and
// its message is on the page, the group still DRAINING. A reservation
// depth out of range is refused beside its field.
func TestDashboardGroupState(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{})
	b := newBrowser(t, exe)
	b.login(t, d.URL, d.AdminToken, "admin")
	form := `#groups form[data-group=default]`
	group := func() v1.Group {
		var g v1.Group
		d.Do(d.AdminToken, "GET", "/v1/resource-groups/default", nil, &g)
		return g
	}
	b.go_(t, "#/groups", `document.querySelector('`+form+`')?.dataset.state === 'ACTIVE'`)
	b.checkLabels(t, "groups")
	b.click(t, "Stop", form+` button[data-to=STOPPED]`)
	b.waitJS(t, "STOPPED", `document.querySelector('`+form+`')?.dataset.state === 'STOPPED'`)
	if g := group(); g.State != "STOPPED" {
		t.Fatalf("after Stop the group is %s", g.State)
	}
	b.click(t, "Start", form+` button[data-to=ACTIVE]`)
	b.waitJS(t, "ACTIVE", `document.querySelector('`+form+`')?.dataset.state === 'ACTIVE'`)

	b.run(t, "a depth of 500", chromedp.SetValue(chromedp.ID("g-default-hol"), "reserve"),
		chromedp.SetValue(chromedp.ID("g-default-depth"), "500"),
		chromedp.Click(chromedp.CSS(form+` button[type=submit]`)))
	b.waitJS(t, "the depth's error", `!document.getElementById('g-default-depth-error').hidden`)
	if g := group(); g.HeadOfLine != "skip" {
		t.Fatalf("a refused save changed head_of_line to %s", g.HeadOfLine)
	}
	b.run(t, "reserve with depth 3", chromedp.SetValue(chromedp.ID("g-default-depth"), "3"),
		chromedp.Click(chromedp.CSS(form+` button[type=submit]`)))
	apitest.Eventually(t, 10*time.Second, "reserve saved", func() bool {
		g := group()
		return g.HeadOfLine == "reserve" && g.ReservationDepth == 3
	})
	b.waitJS(t, "the form shows reserve and 3", `document.getElementById('g-default-hol')?.value === 'reserve' &&
		document.getElementById('g-default-depth').value === '3'`)

	b.click(t, "Drain", form+` button[data-to=DRAINING]`)
	b.waitJS(t, "DRAINING", `document.querySelector('`+form+`')?.dataset.state === 'DRAINING'`)
	b.click(t, "Start a DRAINING group", form+` button[data-to=ACTIVE]`)
	b.waitJS(t, "the 409's message", `!document.querySelector('`+form+` .state-error').hidden`)
	msg := eval[string](t, b, `document.querySelector('`+form+` .state-error').textContent`)
	if !strings.Contains(msg, "DRAINING") {
		t.Errorf("the refusal reads %q; want the API's message naming DRAINING", msg)
	}
	if g := group(); g.State != "DRAINING" {
		t.Errorf("a refused move left the group %s", g.State)
	}
	b.shot(t, "group-refused")
}
