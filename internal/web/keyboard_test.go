package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// TestDashboardKeyboard: someone without a mouse signs in, reaches the
// Sessions page from the navigation, fills the create form and submits it,
// all with Tab, typing and Enter; the new session shows in the list.
func TestDashboardKeyboard(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{Logs: logs})
	alice := d.User("alice", "user", "p1")

	b := newBrowser(t, exe)
	b.run(t, "open the login form", chromedp.Navigate(d.URL+"/"), chromedp.WaitVisible(chromedp.ID("login-token")))
	// The token field has the focus on arrival: type, then Enter submits.
	if focused := eval[string](t, b, `document.activeElement.id`); focused != "login-token" {
		t.Errorf("focus on the login page is on %q, want the token field", focused)
	}
	b.run(t, "sign in by keyboard", chromedp.KeyEvent(alice+kb.Enter))
	b.waitJS(t, "signed in", `(document.getElementById('whoami')||{}).textContent?.startsWith("alice")`)

	// tabTo presses Tab until the focused element matches test, as a
	// keyboard user would walk the page; a control that Tab never reaches
	// fails the test.
	tabTo := func(what, test string) {
		t.Helper()
		for range 60 {
			if eval[bool](t, b, fmt.Sprintf(`(() => { const el = document.activeElement; return !!el && (%s); })()`, test)) {
				return
			}
			b.run(t, "Tab", chromedp.KeyEvent(kb.Tab))
		}
		t.Fatalf("Tab never reached %s", what)
	}
	tabTo("the Sessions link", `el.getAttribute('href') === '#/sessions'`)
	b.run(t, "follow the link", chromedp.KeyEvent(kb.Enter))
	b.waitJS(t, "the sessions page", `location.hash === '#/sessions' && !!document.getElementById('cs-image')`)

	tabTo("the name field", `el.id === 'cs-name'`)
	b.run(t, "type a name", chromedp.KeyEvent("by-keyboard"))
	tabTo("the image field", `el.id === 'cs-image'`)
	b.run(t, "type an image, submit with Enter", chromedp.KeyEvent("sleep"+kb.Enter))
	b.waitJS(t, "the new session listed", `document.getElementById('main').textContent.includes('by-keyboard')`)

	// Every focusable control says what it is to a screen reader.
	unnamed := eval[[]string](t, b, `[...document.querySelectorAll('a[href], button, input, select, textarea')]
		.filter(el => !el.disabled && el.offsetParent !== null)
		.filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.textContent.trim())
		.map(el => el.outerHTML.slice(0, 120))`)
	if len(unnamed) > 0 {
		t.Errorf("controls with no accessible name: %s", strings.Join(unnamed, "\n"))
	}
	if !b.noCSPViolations(t) {
		t.Error("the page broke its Content-Security-Policy")
	}
}
