package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
