package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestDashboardUsageHistory: My usage plots past use from GET /v1/usage,
// a line per user for the chosen slot, with each one's total; a user sees
// only their own line, an admin everyone's.
func TestDashboardUsageHistory(t *testing.T) {
	exe := chromium(t)
	d := startDash(t, apitest.Options{Agents: 1})
	alice := d.User("alice", "user", "p1")
	ctx := context.Background()
	if _, err := d.Store.RollupUsage(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	var se v1.Session
	if code := d.Do(alice, "POST", "/v1/sessions", v1.CreateSessionRequest{Image: "sleep",
		Resources: map[string]string{"cpu": "4", "mem": "1g"}}, &se); code != http.StatusCreated {
		t.Fatalf("session: status %d", code)
	}
	apitest.Eventually(t, 10*time.Second, "the session running", func() bool {
		var got v1.Session
		d.Do(alice, "GET", "/v1/sessions/"+se.ID, nil, &got)
		return got.Status == "RUNNING"
	})
	// Credit two hours of alice's 4 cpu.
	if _, err := d.Store.RollupUsage(ctx, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, exe)
	b.login(t, d.URL, d.AdminToken, "admin")
	b.go_(t, "#/usage", `document.querySelector('#hist-legend li[data-key=alice]') !== null`)
	b.checkLabels(t, "usage history")
	legend := eval[string](t, b, `document.querySelector('#hist-legend li[data-key=alice]').textContent`)
	if !strings.HasPrefix(legend, "alice 8.0 cpu-hours") {
		t.Errorf("legend = %q, want alice's 8 cpu-hours", legend)
	}
	if paths := eval[int](t, b, `document.querySelectorAll('#usage-history path[data-slot=alice]').length`); paths != 1 {
		t.Errorf("%d lines for alice, want 1", paths)
	}
	b.shot(t, "usage-history")
}
