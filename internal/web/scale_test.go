package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestOverviewScale measures, and logs, how long the pages take over 1,000
// agents and 10,000 sessions: from the route change to the page drawn,
// with the API's share (fetch and JSON) apart. It asserts only that they
// draw, not how fast: timings on a shared machine would make a flaky
// test, and the figure is for people to read.
func TestOverviewScale(t *testing.T) {
	exe := chromium(t)
	const agents, sessions = 1000, 10000
	d := startDash(t, apitest.Options{Agents: 1, Manual: true})
	ctx := context.Background()
	reg := d.Slots
	capacity, err := reg.ParseSlots(map[string]string{"cpu": "16", "mem": "64g"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range agents - 1 {
		if _, err := d.Store.RegisterAgent(ctx, domain.Agent{ID: domain.AgentID(fmt.Sprintf("scale-%04d", i)),
			ResourceGroup: "default", Address: "127.0.0.1:0", Architecture: "x86_64", Runtime: "test",
			Status: domain.AgentAlive, Schedulable: true, Capacity: capacity}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	owner := domain.Owner{User: "admin", Project: "default", Domain: "default"}
	for i := range sessions {
		id := domain.SessionID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		s := domain.Session{ID: id, Name: fmt.Sprintf("load-%d", i), Owner: owner, Type: domain.TypeBatch,
			Image: "sleep", Architecture: "x86_64", ResourceGroup: "default", ClusterMode: domain.SingleNode,
			ClusterSize: 1, Priority: 10, Requested: req, Status: domain.SessionPending, StatusChangedAt: now, CreatedAt: now}
		k := domain.Kernel{ID: domain.KernelID(string(id) + "-k0"), SessionID: id, ClusterRole: domain.RoleMain,
			Image: "sleep", Architecture: "x86_64", Requested: req, Status: domain.KernelPending, StatusChangedAt: now}
		if err := d.Store.CreateSession(ctx, s, []domain.Kernel{k}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seeded %d agents and %d sessions in %v", agents, sessions, time.Since(start).Round(time.Millisecond))

	b := newBrowser(t, exe)
	b.login(t, d.URL, d.AdminToken, "admin")
	b.waitJS(t, "the overview over everything", fmt.Sprintf(`document.getElementById('main').dataset.sessions === '%d'`, sessions))
	for _, page := range []struct{ name, hash, drawn string }{
		{"overview", "#/", fmt.Sprintf(`document.getElementById('main').dataset.sessions === '%d' && document.getElementById('tile-pending')?.textContent.startsWith('%d')`, sessions, sessions)},
		{"sessions", "#/sessions", fmt.Sprintf(`document.getElementById('session-count')?.textContent === '200 of %d sessions'`, sessions)},
		{"agents", "#/agents", fmt.Sprintf(`document.querySelectorAll('#agent-rows tr').length === 200 && document.querySelector('#agents').parentElement.parentElement.textContent.includes('200 of %d agents')`, agents)},
	} {
		// Leave for a page with nothing to load, so the measured route
		// change starts from a clean page.
		b.go_(t, "#/nowhere", `document.querySelector('#main h1')?.textContent === 'Not found'`)
		t0 := time.Now()
		b.go_(t, page.hash, page.drawn)
		took := time.Since(t0)
		type timing struct {
			Load string `json:"load"`
			Draw string `json:"draw"`
		}
		tm := eval[timing](t, b, `({load: document.getElementById('main').dataset.loadMs || '', draw: document.getElementById('main').dataset.drawMs || ''})`)
		if tm.Load != "" {
			t.Logf("%s over %d agents and %d sessions: drawn %v after the route change (API fetch and parse %s ms, drawing %s ms)",
				page.name, agents, sessions, took.Round(time.Millisecond), tm.Load, tm.Draw)
		} else {
			t.Logf("%s over %d agents and %d sessions: drawn %v after the route change", page.name, agents, sessions, took.Round(time.Millisecond))
		}
		b.shot(t, "scale-"+page.name)
	}
}
