package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestDashboardJobs: alice creates a job of min 2 from the form (a min of
// 0 is refused beside its field first), sees it NEW and memberless, then
// watches her two submitted members appear on the page, start together
// and make the job RUNNING, without a reload. Cancel ends both members
// and the job FAILED; the cancel button goes away.
func TestDashboardJobs(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{})
	alice := d.User("alice", "user", "p1")

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	b.go_(t, "#/jobs", `document.getElementById('job-count')?.textContent === 'No jobs yet.'`)
	b.checkLabels(t, "jobs")
	b.checkNames(t, "jobs")
	b.run(t, "a job of min 0",
		chromedp.SendKeys(chromedp.ID("cj-name"), "spark"),
		chromedp.SetValue(chromedp.ID("cj-min"), "0"),
		chromedp.SetValue(chromedp.ID("cj-policy"), "fail"),
		chromedp.Click(chromedp.CSS(`#create-job button[type=submit]`)))
	b.waitJS(t, "the min's error", `!document.getElementById('cj-min-error').hidden`)
	var list v1.List[v1.Job]
	if d.Do(alice, "GET", "/v1/jobs", nil, &list); len(list.Items) != 0 {
		t.Fatalf("a refused job was created: %+v", list.Items)
	}
	b.run(t, "min 2", chromedp.SetValue(chromedp.ID("cj-min"), "2"),
		chromedp.Click(chromedp.CSS(`#create-job button[type=submit]`)))
	b.waitJS(t, "the job's page, NEW", `location.hash.startsWith('#/jobs/') && document.getElementById('main').dataset.state === 'NEW'`)
	b.checkLabels(t, "job")
	b.checkNames(t, "job")
	eval[bool](t, b, `window.__noReload = true`)
	if d.Do(alice, "GET", "/v1/jobs", nil, &list); len(list.Items) != 1 || list.Items[0].MinAvailable != 2 ||
		list.Items[0].FailurePolicy != "fail" {
		t.Fatalf("jobs after the form: %+v", list.Items)
	}
	job := list.Items[0]

	submit := func(name string) v1.Session {
		t.Helper()
		var s v1.Session
		if code := d.Do(alice, "POST", "/v1/sessions", v1.CreateSessionRequest{Name: name, Image: "sleep", Job: "spark",
			Resources: map[string]string{"cpu": "1", "mem": "1g"}}, &s); code != http.StatusCreated {
			t.Fatalf("member %s: status %d", name, code)
		}
		return s
	}
	driver := submit("driver")
	b.waitJS(t, "one PENDING member", `(() => { const r = document.querySelectorAll('#member-rows tr');
		return r.length === 1 && r[0].dataset.status === 'PENDING'; })()`)
	b.shot(t, "job-one-member")
	exec := submit("executor")
	b.waitJS(t, "both members RUNNING and the job RUNNING", `document.getElementById('main').dataset.state === 'RUNNING' &&
		[...document.querySelectorAll('#member-rows tr')].filter(r => r.dataset.status === 'RUNNING').length === 2`)
	if !eval[bool](t, b, `window.__noReload === true`) {
		t.Error("the page reloaded while the job started")
	}
	links := eval[[]string](t, b, `[...document.querySelectorAll('#member-rows a')].map(a => a.getAttribute('href')).sort()`)
	want := []string{"#/sessions/" + driver.ID, "#/sessions/" + exec.ID}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	if fmt.Sprint(links) != fmt.Sprint(want) {
		t.Errorf("member links = %v, want %v", links, want)
	}
	if facts := eval[string](t, b, `document.getElementById('job-facts').textContent`); !strings.Contains(facts, "2 placed of 2 needed") {
		t.Errorf("job facts = %q; want the gang's count", facts)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#job-history-rows tr').length`); n < 3 {
		t.Errorf("history has %d rows, want the job's state changes", n)
	}
	b.shot(t, "job-running")

	// A member's page links back to its job.
	b.click(t, "open a member", `#member-rows a`)
	b.waitJS(t, "the member's link to its job", `document.getElementById('session-job')?.getAttribute('href') === '#/jobs/`+job.ID+`'`)

	b.go_(t, "#/jobs", `document.querySelector('#job-rows tr[data-state=RUNNING] td.placed')?.textContent === '2 / 2'`)
	b.shot(t, "jobs")
	b.click(t, "open the job", `#job-rows tr a`)
	b.waitJS(t, "the cancel button", `document.getElementById('cancel-job') !== null`)
	b.click(t, "cancel it", "#cancel-job")
	b.waitJS(t, "the job FAILED, its members TERMINATED, no cancel button", `document.getElementById('main').dataset.state === 'FAILED' &&
		[...document.querySelectorAll('#member-rows tr')].every(r => r.dataset.status === 'TERMINATED') &&
		document.getElementById('cancel-job') === null`)
	var got v1.Job
	if d.Do(alice, "GET", "/v1/jobs/"+job.ID, nil, &got); got.State != "FAILED" {
		t.Errorf("job after cancel: %s", got.State)
	}
	b.shot(t, "job-cancelled")
	if !b.noCSPViolations(t) {
		t.Error("the page broke its Content-Security-Policy")
	}
}
