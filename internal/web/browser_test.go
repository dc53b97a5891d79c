package web_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/web"
)

// chromium finds the browser the tests drive. Without one they skip on a
// laptop but fail under CI=true, where .ci/services.sh installs it.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests start chromium; skipped with -short")
	}
	candidates := []string{os.Getenv("SOKOVAN_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "headless-shell"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := "no chromium found (install Debian's chromium, or set SOKOVAN_CHROMIUM to a Chrome binary)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI must run the browser tests: .ci/services.sh installs it")
	}
	t.Skip(msg)
	return ""
}

// dash is a manager with the dashboard mounted as `sokovan server` mounts
// it: web.Mount in front of the API server.
type dash struct {
	*apitest.Manager
	URL string
}

func startDash(t *testing.T, opts apitest.Options) *dash {
	t.Helper()
	if opts.API.EventPoll == 0 {
		opts.API.EventPoll = 20 * time.Millisecond
	}
	m := apitest.New(t, opts)
	baseCtx, endStreams := context.WithCancel(context.Background())
	hs := httptest.NewUnstartedServer(web.Mount(m.Server))
	hs.Config.BaseContext = func(net.Listener) context.Context { return baseCtx }
	hs.Start()
	t.Cleanup(func() { endStreams(); hs.Close() })
	return &dash{Manager: m, URL: hs.URL}
}

// browser is one tab with its own sessionStorage, so each signs in as
// its own user. Console errors, uncaught exceptions and CSP violations
// are collected; the tab fails the test with them at the end.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

func newBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{ctx: ctx}
	// The first call starts chromium; it must have no deadline of its own,
	// which would end the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				msg = "console.error: " + strings.Join(parts, " ")
			}
		case *cdplog.EventEntryAdded:
			// Failed fetches the test provokes (a 400 from a bad form)
			// are logged as network errors; those are expected.
			if e.Entry.Level == cdplog.EntryLevelError && e.Entry.Source != cdplog.EntrySourceNetwork {
				msg = fmt.Sprintf("log %s: %s", e.Entry.Source, e.Entry.Text)
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.problems = append(b.problems, msg)
			b.mu.Unlock()
		}
	})
	if err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("listen to the tab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SOKOVAN_WEB_SCREENSHOTS") != "" {
			b.screenshots(t, "end")
		}
		b.mu.Lock()
		problems := b.problems
		b.mu.Unlock()
		for _, p := range problems {
			t.Errorf("browser: %s", p)
		}
		cancelTab()
		cancelAlloc()
	})
	return b
}

// run runs actions with a deadline, failing the test with what it was
// doing.
func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// click clicks the element sel matches, as a user would. A view that
// redraws (a live update landing) can replace the element between the
// query and the click, which chromedp reports as a node it cannot find;
// no click was dispatched then, so it is tried again on the new element.
func (b *browser) click(t *testing.T, what, sel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	for {
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node") || ctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript condition in the page until it is true.
func (b *browser) waitJS(t *testing.T, what, expr string) {
	t.Helper()
	b.run(t, "wait for "+what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(15*time.Second)))
}

// artifacts is where screenshots go: $SOKOVAN_TEST_ARTIFACTS when set
// (CI keeps that folder), otherwise a folder under the system's temp dir
// that outlives the test, so a failure can be looked at.
func artifacts(t *testing.T) string {
	dir := os.Getenv("SOKOVAN_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sokovan-web-artifacts")
	}
	dir = filepath.Join(dir, regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("artifacts: %v", err)
	}
	return dir
}

// screenshots saves the page at a laptop's and a phone's size.
func (b *browser) screenshots(t *testing.T, name string) {
	t.Helper()
	dir := artifacts(t)
	for _, size := range []struct {
		w, h   int64
		mobile bool
	}{{1280, 800, false}, {390, 844, true}} {
		ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
		var png []byte
		opts := []chromedp.EmulateViewportOption{}
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateScale(1))
		}
		err := chromedp.Do(ctx, chromedp.EmulateViewport(size.w, size.h, opts...),
			chromedp.Sleep(200*time.Millisecond)) // let the layout settle at the new size
		if err == nil {
			png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		}
		_ = chromedp.Do(ctx, chromedp.ResetViewport())
		cancel()
		if err != nil {
			t.Logf("screenshot %s at %dx%d: %v", name, size.w, size.h, err)
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("%s-%dx%d.png", name, size.w, size.h))
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Logf("screenshot: %v", err)
			continue
		}
		t.Logf("screenshot: %s", p)
	}
}

// shot saves screenshots when SOKOVAN_WEB_SCREENSHOTS is set, for
// looking at the pages by eye.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	if os.Getenv("SOKOVAN_WEB_SCREENSHOTS") != "" {
		b.screenshots(t, name)
	}
}

func (b *browser) login(t *testing.T, url, token, name string) {
	t.Helper()
	b.run(t, "open the login form", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.ID("login-token")))
	b.checkLabels(t, "login")
	b.run(t, "sign in", chromedp.SendKeys(chromedp.ID("login-token"), token),
		chromedp.Click(chromedp.CSS("form.login button[type=submit]")))
	b.waitJS(t, "signed in as "+name, fmt.Sprintf(`(document.getElementById('whoami')||{}).textContent?.startsWith(%q)`, name))
}

// checkLabels fails the test for any form control without a label.
func (b *browser) checkLabels(t *testing.T, page string) {
	t.Helper()
	missing := eval[[]string](t, b, `[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
		.filter(el => el.labels.length === 0 && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
		.map(el => el.outerHTML)`)
	if len(missing) > 0 {
		t.Errorf("%s: form controls without a label: %v", page, missing)
	}
}

func (b *browser) go_(t *testing.T, hash, ready string) {
	t.Helper()
	eval[string](t, b, fmt.Sprintf(`location.hash = %q`, hash))
	b.waitJS(t, hash+" drawn", ready)
}

// logs answers every kernel's logs with one line naming it, from the
// offset asked for on, as an agent serves a log.
func logs(_ context.Context, _ domain.AgentID, k domain.KernelID, offset int64) (io.ReadCloser, error) {
	line := "hello from kernel " + string(k) + "\n"
	return io.NopCloser(strings.NewReader(line[min(offset, int64(len(line))):])), nil
}

func TestDashboardUser(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{Logs: logs})
	alice := d.User("alice", "user", "p1")
	bob := d.User("bob", "user", "p1")
	var bobs v1.Session
	if code := d.Do(bob, "POST", "/v1/sessions", v1.CreateSessionRequest{Name: "bobs-secret", Image: "sleep"}, &bobs); code != http.StatusCreated {
		t.Fatalf("bob's session: status %d", code)
	}

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	stored := eval[string](t, b, `sessionStorage.getItem('sokovan.token')`)
	cookies := eval[string](t, b, `document.cookie`)
	if stored != alice || cookies != "" {
		t.Errorf("token in sessionStorage: %v, cookies %q; want the token there and no cookie", stored == alice, cookies)
	}

	b.go_(t, "#/sessions", `document.getElementById('session-count')?.textContent !== ''`)
	b.checkLabels(t, "sessions")
	// A marker on window proves that what follows happens without a
	// reload: a reload would drop it.
	eval[bool](t, b, `window.__noReload = true`)

	// A bad quantity: the API's 400 names resources.mem, and the message
	// shows beside the memory field.
	b.run(t, "submit a bad quantity",
		chromedp.SendKeys(chromedp.ID("cs-image"), "sleep"),
		chromedp.SendKeys(chromedp.ID("cs-name"), "web-test"),
		chromedp.SendKeys(chromedp.ID("cs-mem"), "lots"),
		chromedp.Click(chromedp.CSS(`#create-session button[type=submit]`)))
	b.waitJS(t, "the memory field's error", `!document.getElementById('cs-mem-error').hidden`)
	type memErrT struct {
		Text      string `json:"text"`
		Invalid   string `json:"invalid"`
		SameField bool   `json:"same"`
	}
	memErr := eval[memErrT](t, b, `(() => { const e = document.getElementById('cs-mem-error'), c = document.getElementById('cs-mem');
		return {text: e.textContent, invalid: c.getAttribute('aria-invalid'), same: e.parentElement === c.parentElement}; })()`)
	if !strings.Contains(memErr.Text, "lots") || memErr.Invalid != "true" || !memErr.SameField {
		t.Errorf("memory field error = %+v; want the API's message naming the value, aria-invalid, beside the field", memErr)
	}
	b.shot(t, "sessions-field-error")

	b.run(t, "fix the quantity and submit",
		chromedp.SetValue(chromedp.ID("cs-mem"), "1g"),
		chromedp.Click(chromedp.CSS(`#create-session button[type=submit]`)))
	b.waitJS(t, "the error cleared", `document.getElementById('cs-mem-error').hidden`)
	b.waitJS(t, "the new session RUNNING in the list",
		`[...document.querySelectorAll('#session-rows tr')].some(r => r.cells[1].textContent === 'web-test' && r.dataset.status === 'RUNNING')`)
	noReload := eval[bool](t, b, `window.__noReload === true`)
	if !noReload {
		t.Error("the page reloaded while the session started; it should update in place")
	}
	rowsText := eval[string](t, b, `document.getElementById('sessions').textContent`)
	if strings.Contains(rowsText, "bobs-secret") || strings.Contains(rowsText, bobs.ID[:8]) {
		t.Error("alice's session list shows bob's session")
	}
	b.shot(t, "sessions")

	// Its page: the timeline has a RUNNING lane and the logs are read.
	b.click(t, "open the session", `#session-rows tr a`)
	b.waitJS(t, "the timeline's RUNNING span", `document.querySelector('#timeline svg rect.span[data-status=RUNNING]') !== null`)
	b.waitJS(t, "the logs", `document.getElementById('logs').textContent.includes('hello from kernel')`)
	b.checkLabels(t, "session")
	b.shot(t, "session-running")

	b.click(t, "cancel it", "#cancel")
	b.waitJS(t, "the session TERMINATED", `document.getElementById('main').dataset.status === 'TERMINATED'`)
	b.shot(t, "session-terminated")

	// A kernel that exits by itself: its exit code is on the page.
	var exits v1.Session
	if code := d.Do(alice, "POST", "/v1/sessions", v1.CreateSessionRequest{Name: "exits", Image: "exit:3", Type: "batch"}, &exits); code != http.StatusCreated {
		t.Fatalf("exit:3 session: status %d", code)
	}
	b.go_(t, "#/sessions/"+exits.ID, `document.querySelector('#kernels td.exit')?.textContent === '3'`)

	// A user sees no admin controls.
	b.go_(t, "#/agents", `document.querySelectorAll('#agent-rows tr').length === 2`)
	verbs := eval[int](t, b, `document.querySelectorAll('[data-verb]').length`)
	if verbs != 0 {
		t.Errorf("a user sees %d agent controls, want none", verbs)
	}
	b.checkLabels(t, "agents")
	b.go_(t, "#/groups", `document.querySelector('#groups form') !== null`)
	type editableT struct {
		Save     int  `json:"save"`
		Disabled bool `json:"disabled"`
	}
	editable := eval[editableT](t, b, `({save: document.querySelectorAll('#groups button[type=submit]').length,
		disabled: document.querySelector('#groups fieldset').disabled})`)
	if editable.Save != 0 || !editable.Disabled {
		t.Errorf("a user's group form: %+v; want no save button and a disabled fieldset", editable)
	}
	b.checkLabels(t, "groups")

	// bob's session by URL is "not found" for alice.
	b.go_(t, "#/sessions/"+bobs.ID, `document.querySelector('#main .form-error') !== null`)
	body := eval[string](t, b, `document.getElementById('main').textContent`)
	if strings.Contains(body, "bobs-secret") {
		t.Error("alice can open bob's session page")
	}
	if !b.noCSPViolations(t) {
		t.Error("the page broke its Content-Security-Policy")
	}
}

func (b *browser) noCSPViolations(t *testing.T) bool {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		if strings.Contains(p, "Content Security Policy") {
			return false
		}
	}
	return true
}

func TestDashboardAdmin(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{Logs: logs})
	carol := d.User("carol", "user", "p1")
	var hers v1.Session
	if code := d.Do(carol, "POST", "/v1/sessions", v1.CreateSessionRequest{Name: "carols", Image: "sleep",
		Resources: map[string]string{"cpu": "2", "mem": "4g"}}, &hers); code != http.StatusCreated {
		t.Fatalf("carol's session: status %d", code)
	}
	apitest.Eventually(t, 10*time.Second, "carol's session running", func() bool {
		var s v1.Session
		d.Do(carol, "GET", "/v1/sessions/"+hers.ID, nil, &s)
		return s.Status == "RUNNING"
	})

	b := newBrowser(t, exe)
	b.login(t, d.URL, d.AdminToken, "admin")
	// The overview sums both agents (2 × cpu 8) and shows carol's 2.
	b.waitJS(t, "the cpu bar", `document.querySelector('#capacity [data-slot=cpu] .meter-text')?.textContent === '2 / 16 (13%)'`)
	b.waitJS(t, "the running tile", `document.querySelector('#tile-running .tile-value')?.textContent === '1'`)
	b.checkLabels(t, "overview")
	b.shot(t, "overview")

	b.go_(t, "#/sessions", `document.querySelector('#session-rows tr') !== null`)
	owner := eval[string](t, b, `document.querySelector('#session-rows tr').cells[2].textContent`)
	if owner != "carol" {
		t.Errorf("admin's session list owner column = %q, want carol", owner)
	}

	b.go_(t, "#/agents", `document.querySelectorAll('#agent-rows tr').length === 2`)
	b.checkLabels(t, "agents")
	b.click(t, "cordon agent-1", `#agent-rows tr[data-id="agent-1"] button[data-verb=cordon]`)
	b.waitJS(t, "agent-1 cordoned on the page",
		`document.querySelector('#agent-rows tr[data-id="agent-1"]').dataset.schedulable === 'false'`)
	var a v1.Agent
	d.Do(d.AdminToken, "GET", "/v1/agents/agent-1", nil, &a)
	if a.Schedulable {
		t.Error("the cordon button did not cordon agent-1")
	}
	b.shot(t, "agents-cordoned")
	b.click(t, "uncordon agent-1", `#agent-rows tr[data-id="agent-1"] button[data-verb=uncordon]`)
	b.waitJS(t, "agent-1 schedulable again",
		`document.querySelector('#agent-rows tr[data-id="agent-1"]').dataset.schedulable === 'true'`)

	// Groups: a bad timeout is shown beside its field; a good change is
	// saved.
	b.go_(t, "#/groups", `document.querySelector('#groups form[data-group=default] button[type=submit]') !== null`)
	b.checkLabels(t, "groups")
	b.run(t, "a bad timeout",
		chromedp.SetValue(chromedp.ID("g-default-t-pending"), "soon"),
		chromedp.Click(chromedp.CSS(`#groups form[data-group=default] button[type=submit]`)))
	b.waitJS(t, "the timeout's error", `!document.getElementById('g-default-t-pending-error').hidden`)
	b.shot(t, "groups-error")
	b.run(t, "a good change",
		chromedp.SetValue(chromedp.ID("g-default-t-pending"), "10m"),
		chromedp.SetValue(chromedp.ID("g-default-seq"), "lifo"),
		chromedp.Click(chromedp.CSS(`#groups form[data-group=default] button[type=submit]`)))
	apitest.Eventually(t, 10*time.Second, "the group saved", func() bool {
		var g v1.Group
		d.Do(d.AdminToken, "GET", "/v1/resource-groups/default", nil, &g)
		return g.Sequencer == "lifo" && g.Timeouts.Pending == "600s"
	})
}

// TestDashboardQueue: one agent (cpu 8) runs alice's first session of
// cpu 6, so her next two wait behind it. The queue page lists them at
// positions 1 and 2 with the capacity blocker and no estimated start,
// follows the event stream when the first one ends, shows bob, who
// owns none of them, only how many are hidden, and an admin the owner.
// My usage draws alice's policy as a bar.
func TestDashboardQueue(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{Agents: 1})
	alice := d.User("alice", "user", "p1")
	bob := d.User("bob", "user", "p2")
	if code := d.Do(d.AdminToken, "PUT", "/v1/policies/user/alice",
		v1.PolicyRequest{MaxSlots: map[string]string{"cpu": "16"}}, nil); code != http.StatusOK {
		t.Fatalf("alice's policy: status %d", code)
	}
	create := func(name string) v1.Session {
		t.Helper()
		var se v1.Session
		if code := d.Do(alice, "POST", "/v1/sessions", v1.CreateSessionRequest{Name: name, Image: "sleep",
			Resources: map[string]string{"cpu": "6", "mem": "1g"}}, &se); code != http.StatusCreated {
			t.Fatalf("session %s: status %d", name, code)
		}
		return se
	}
	runs := create("runs")
	apitest.Eventually(t, 10*time.Second, "the first session running", func() bool {
		var se v1.Session
		d.Do(alice, "GET", "/v1/sessions/"+runs.ID, nil, &se)
		return se.Status == "RUNNING"
	})
	first, second := create("first-wait"), create("second-wait")

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	b.go_(t, "#/queue", `document.querySelectorAll('#queue-rows tr').length === 2`)
	b.checkLabels(t, "queue")
	type rowT struct {
		Pos     string `json:"pos"`
		ID      string `json:"id"`
		Outcome string `json:"outcome"`
		Text    string `json:"text"`
		Est     string `json:"est"`
	}
	rows := eval[[]rowT](t, b, `[...document.querySelectorAll('#queue-rows tr')].map(r => ({pos: r.cells[0].textContent,
		id: r.dataset.id, outcome: r.dataset.outcome, text: r.querySelector('td.blockers').textContent,
		est: r.querySelector('td.est').textContent}))`)
	if len(rows) != 2 || rows[0].Pos != "1" || rows[0].ID != first.ID || rows[1].Pos != "2" || rows[1].ID != second.ID {
		t.Fatalf("alice's queue = %+v; want first-wait at 1 and second-wait at 2", rows)
	}
	for _, r := range rows {
		if r.Outcome != "wait" || !strings.Contains(r.Text, "cpu") || !strings.Contains(r.Text, "agents are busy") || r.Est != "—" {
			t.Errorf("queue row %+v; want wait, a cpu capacity blocker with its hint, and no estimated start", r)
		}
	}
	if summary := eval[string](t, b, `document.getElementById('queue-summary').textContent`); !strings.HasPrefix(summary, "2 pending in default") {
		t.Errorf("queue summary = %q", summary)
	}
	if owners := eval[int](t, b, `[...document.querySelectorAll('#queue th')].filter(th => th.textContent === 'Owner').length`); owners != 0 {
		t.Error("a user's queue has an owner column")
	}
	b.shot(t, "queue")

	b.go_(t, "#/usage", `document.querySelector('.usage-limit[data-scope=user] [data-slot=cpu] .meter-text')?.textContent === '6 / 16 (38%)'`)
	b.checkLabels(t, "usage")
	if asking := eval[string](t, b, `document.querySelector('.usage-limit[data-scope=user] [data-slot=cpu] .hint')?.textContent`); asking != "your pending sessions ask for 12 more" {
		t.Errorf("usage hint = %q", asking)
	}
	b.shot(t, "usage")

	// The first session ends: the event stream brings first-wait to the
	// agent and second-wait to the head of the queue, without a click.
	b.go_(t, "#/queue", `document.querySelectorAll('#queue-rows tr').length === 2`)
	if code := d.Do(alice, "DELETE", "/v1/sessions/"+runs.ID, nil, nil); code >= 300 {
		t.Fatalf("cancel the running session: status %d", code)
	}
	b.waitJS(t, "second-wait at the head of the queue", fmt.Sprintf(`(() => { const r = document.querySelectorAll('#queue-rows tr');
		return r.length === 1 && r[0].dataset.id === %q && r[0].dataset.position === '1'; })()`, second.ID))
	b.click(t, "refresh", "#queue-refresh")
	b.waitJS(t, "the refresh done", `!document.getElementById('queue-refresh').disabled`)

	// bob sees alice's pending session only as a count.
	b.click(t, "sign out", `header .who button`)
	b.login(t, d.URL, bob, "bob")
	b.go_(t, "#/queue/default", `document.getElementById('queue-summary').dataset.hidden === '1'`)
	b.checkLabels(t, "queue as bob")
	type bobT struct {
		Rows    int    `json:"rows"`
		Table   bool   `json:"table"`
		Summary string `json:"summary"`
		Empty   string `json:"empty"`
		Main    string `json:"main"`
	}
	seen := eval[bobT](t, b, `({rows: document.querySelectorAll('#queue-rows tr').length, table: !document.getElementById('queue').hidden,
		summary: document.getElementById('queue-summary').textContent, empty: document.getElementById('queue-empty').textContent,
		main: document.getElementById('main').textContent})`)
	if seen.Rows != 0 || seen.Table || !strings.Contains(seen.Summary, "1 of them other users'") ||
		seen.Empty != "None of your sessions wait in this group." || strings.Contains(seen.Main, "second-wait") ||
		strings.Contains(seen.Main, second.ID[:8]) {
		t.Errorf("bob's queue: %+v; want only the hidden count", seen)
	}
	b.shot(t, "queue-other-user")
	b.go_(t, "#/usage", `document.getElementById('usage-limits').textContent.includes('No user, project or domain policy')`)

	// An admin sees every session, with its owner.
	b.click(t, "sign out", `header .who button`)
	b.login(t, d.URL, d.AdminToken, "admin")
	b.go_(t, "#/queue", `document.querySelectorAll('#queue-rows tr').length === 1`)
	if owner := eval[string](t, b, `document.querySelector('#queue-rows td[data-label=Owner]').textContent`); owner != "alice" {
		t.Errorf("admin's queue owner = %q, want alice", owner)
	}
	if !b.noCSPViolations(t) {
		t.Error("the page broke its Content-Security-Policy")
	}
}

// TestDashboardUtilisation seeds ten minutes of samples, the last five
// with a session holding 2 of 16 cores and 8 of 32 GiB, and checks that a user sees the
// overview's utilisation chart draw a line per slot, switch range, and
// keep every control labelled.
func TestDashboardUtilisation(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{})
	ctx := t.Context()
	now := time.Now()
	sample := func(from, to time.Duration) {
		for off := from; off <= to; off += 10 * time.Second {
			if err := d.Store.RecordUtilisation(ctx, now.Add(off)); err != nil {
				t.Fatal(err)
			}
		}
	}
	sample(-10*time.Minute, -5*time.Minute-10*time.Second)
	carol := d.User("carol", "user", "p1")
	var hers v1.Session
	if code := d.Do(carol, "POST", "/v1/sessions", v1.CreateSessionRequest{Name: "carols", Image: "sleep",
		Resources: map[string]string{"cpu": "2", "mem": "8g"}}, &hers); code != http.StatusCreated {
		t.Fatalf("carol's session: status %d", code)
	}
	apitest.Eventually(t, 10*time.Second, "carol's session running", func() bool {
		var s v1.Session
		d.Do(carol, "GET", "/v1/sessions/"+hers.ID, nil, &s)
		return s.Status == "RUNNING"
	})
	sample(-5*time.Minute, 0)

	b := newBrowser(t, exe)
	b.login(t, d.URL, carol, "carol")
	b.waitJS(t, "a line per slot", `document.querySelectorAll('#utilisation svg path.line').length === 2`)
	cpu := eval[string](t, b, `document.querySelector('#utilisation path[data-slot=cpu]').getAttribute('d')`)
	if !strings.HasPrefix(cpu, "M") || !strings.Contains(cpu, "L") {
		t.Errorf("cpu line: d = %q, want a path of several points", cpu)
	}
	// 5 time labels at 1280 px, and 0%, 50%, 100%.
	if n := eval[int](t, b, `document.querySelectorAll('#utilisation svg text.axis').length`); n < 6 {
		t.Errorf("%d axis labels, want time and percentage labels", n)
	}
	if got := eval[string](t, b, `document.querySelector('#util-legend [data-slot=cpu]').textContent`); !strings.HasPrefix(got, "cpu 13%") {
		t.Errorf("cpu legend = %q, want the last point's 2 of 16 cores (13%%)", got)
	}
	if label := eval[string](t, b, `document.querySelector('#utilisation svg').getAttribute('aria-label')`); !strings.Contains(label, "default") {
		t.Errorf("chart label %q does not name the group", label)
	}
	b.checkLabels(t, "overview with utilisation")
	b.screenshots(t, "utilisation")

	eval[bool](t, b, `(() => { const r = document.getElementById('util-range'); r.value = '7d';
		return r.dispatchEvent(new Event('change')); })()`)
	b.waitJS(t, "the 7-day range drawn", `document.getElementById('utilisation').dataset.range === '7d' &&
		document.querySelectorAll('#utilisation svg path.line').length === 2`)
	b.shot(t, "utilisation-7d")
}
