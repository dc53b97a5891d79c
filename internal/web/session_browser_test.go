package web_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// printer is a kernel that prints a line every 200 ms until stopped, and
// its agent's log of it: each ask gets what was written so far from the
// offset on, as an agent serves a log.
type printer struct {
	mu    sync.Mutex
	out   strings.Builder
	lines int
	stop  chan struct{}
	done  chan struct{}
}

func startPrinter(t *testing.T) *printer {
	p := &printer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				p.mu.Lock()
				p.lines++
				fmt.Fprintf(&p.out, "line %d ✓\n", p.lines)
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(p.end)
	return p
}

func (p *printer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lines
}

func (p *printer) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// end stops the printing, after a last line.
func (p *printer) end() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.out.WriteString("last words\n")
	p.mu.Unlock()
}

func (p *printer) logs(_ context.Context, _ domain.AgentID, _ domain.KernelID, offset int64) (io.ReadCloser, error) {
	s := p.text()
	return io.NopCloser(strings.NewReader(s[min(offset, int64(len(s))):])), nil
}

// TestDashboardLogsFollow: the session page's Follow view of a kernel that
// keeps printing shows the lines printed after the page was opened, says
// nothing of an end while the session runs, and once it has ended shows
// the last line and "End of output.", each byte once.
func TestDashboardLogsFollow(t *testing.T) {
	exe := chromium(t)
	p := startPrinter(t)
	d := startDash(t, apitest.Options{Logs: p.logs})
	alice := d.User("alice", "user", "p1")
	var se v1.Session
	if code := d.Do(alice, "POST", "/v1/sessions", v1.CreateSessionRequest{Name: "printer", Image: "sleep"}, &se); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	apitest.Eventually(t, 10*time.Second, "the session running", func() bool {
		var s v1.Session
		d.Do(alice, "GET", "/v1/sessions/"+se.ID, nil, &s)
		return s.Status == "RUNNING"
	})

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	opened := p.count()
	b.go_(t, "#/sessions/"+se.ID, `document.getElementById('logs').textContent.includes('line 1 ')`)
	if !eval[bool](t, b, `document.getElementById('log-follow').checked`) {
		t.Fatal("Follow is not on by default")
	}
	// Five more lines than were printed when the page opened: they came
	// after it, so only following shows them.
	later := fmt.Sprintf("line %d ✓\n", opened+5)
	for i := 0; ; i++ {
		state := eval[string](t, b, `document.getElementById('log-state').textContent`)
		if state == "End of output." {
			t.Fatalf("the running session's log says %q", state)
		}
		if eval[bool](t, b, fmt.Sprintf(`document.getElementById('logs').textContent.includes(%q)`, later)) {
			break
		}
		if i > 100 {
			t.Fatalf("after 10 s the log has no %q (state %q)", later, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.shot(t, "logs-following")

	p.end()
	if code := d.Do(alice, "DELETE", "/v1/sessions/"+se.ID, nil, nil); code >= 300 {
		t.Fatalf("cancel: status %d", code)
	}
	b.waitJS(t, "the end of the output", `document.getElementById('log-state').textContent === 'End of output.'`)
	if got, want := eval[string](t, b, `document.getElementById('logs').textContent`), p.text(); got != want {
		t.Errorf("the log on the page:\n%s\nwant what the kernel printed, once:\n%s", got, want)
	}
	b.shot(t, "logs-ended")
}

// TestDashboardServicePorts: a session whose kernel serves an HTTP echo
// lists the port with its kernel, host:port and proxy path, and its Open
// link shows the echo in a new tab through the manager's proxy, though a
// link carries no Authorization header. The kernel is sent none of the
// user's credentials, and the new tab has no opener and no token.
func TestDashboardServicePorts(t *testing.T) {
	exe := chromium(t)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "echo: %s %s\nauthorization: %q\ncookie: %q\n", r.Method, r.URL.Path,
			r.Header.Get("Authorization"), r.Header.Get("Cookie"))
	}))
	t.Cleanup(echo.Close)
	host, portStr, err := net.SplitHostPort(strings.TrimPrefix(echo.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	d := startDash(t, apitest.Options{ServicePorts: []domain.ServicePort{{Name: "web", Protocol: "http", Host: host, Port: port}}})
	alice := d.User("alice", "user", "p1")
	var se v1.Session
	if code := d.Do(alice, "POST", "/v1/sessions", v1.CreateSessionRequest{Name: "echo", Image: "sleep"}, &se); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	apitest.Eventually(t, 10*time.Second, "the session running", func() bool {
		d.Do(alice, "GET", "/v1/sessions/"+se.ID, nil, &se)
		return se.Status == "RUNNING"
	})

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	b.go_(t, "#/sessions/"+se.ID, `document.querySelector('#port-rows tr[data-port=web] a') !== null`)
	b.checkNames(t, "session with a port")
	b.shot(t, "session-ports")
	type rowT struct {
		Cells []string `json:"cells"`
		Href  string   `json:"href"`
	}
	row := eval[rowT](t, b, `(() => { const r = document.querySelector('#port-rows tr[data-port=web]');
		return {cells: [...r.cells].map(c => c.textContent), href: r.querySelector('a').getAttribute('href')}; })()`)
	pp := se.ServicePorts[0].ProxyPath
	if len(row.Cells) < 5 || row.Cells[0] != "web" || row.Cells[1] != "http" || !strings.HasPrefix(se.Kernels[0].ID, row.Cells[2]) ||
		row.Cells[3] != net.JoinHostPort(host, portStr) || row.Cells[4] != pp || row.Href != pp {
		t.Errorf("port row %+v; want web, http, the kernel, %s:%s and %s", row, host, portStr, pp)
	}

	opened := chromedp.WaitNewTarget(b.ctx, func(info *target.Info) bool { return strings.HasSuffix(info.URL, pp) })
	b.click(t, "open the port", `#port-rows tr[data-port=web] a`)
	var tab target.ID
	select {
	case tab = <-opened:
	case <-time.After(15 * time.Second):
		t.Fatal("no tab opened for the port")
	}
	tctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(tab))
	defer cancel()
	type pageT struct {
		Text    string `json:"text"`
		Opener  bool   `json:"opener"`
		Token   bool   `json:"token"`
		Cookies string `json:"cookies"`
	}
	var page pageT
	for deadline := time.Now().Add(15 * time.Second); ; {
		ctx, stop := context.WithTimeout(tctx, 5*time.Second)
		page, err = chromedp.Run(ctx, chromedp.Evaluate[pageT](`({text: document.body ? document.body.innerText : '',
			opener: window.opener !== null, token: sessionStorage.getItem('sokovan.token') !== null, cookies: document.cookie})`))
		stop()
		if err == nil && strings.Contains(page.Text, "echo:") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(page.Text, "echo: GET /\n") || !strings.Contains(page.Text, `authorization: ""`) ||
		strings.Contains(page.Text, "sokovan_proxy") || strings.Contains(page.Text, alice) {
		t.Errorf("the port's tab shows %q (err %v); want the echo of GET /, with no token sent to the kernel", page.Text, err)
	}
	if page.Opener || page.Token || page.Cookies != "" {
		t.Errorf("the kernel's page sees opener %v, a token %v, cookies %q; want none", page.Opener, page.Token, page.Cookies)
	}
	if !b.noCSPViolations(t) {
		t.Error("the page broke its Content-Security-Policy")
	}
}
