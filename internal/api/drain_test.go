package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// POST /agents/{id}/drain?deadline=: the agent stops taking work, reports
// its drain, and once the deadline passes the sweep terminates what still
// runs there until the agent reports drained.
func TestDrainWithDeadline(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1, Manual: true})
	alice := m.User("alice", "user", "p1")
	ctx := context.Background()
	cycleUntil := func(id, want string) {
		t.Helper()
		apitest.Eventually(t, 20*time.Second, "session "+id+" to be "+want, func() bool {
			if err := m.Coordinator.Cycle(ctx); err != nil {
				t.Fatal(err)
			}
			return get(t, m, alice, id).Status == want
		})
	}
	s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
	cycleUntil(s.ID, "RUNNING")

	for _, bad := range []string{"soon", "-1s", "9000h"} {
		var e v1.ErrorResponse
		if code := m.Do(m.AdminToken, "POST", "/v1/agents/agent-0/drain?deadline="+bad, nil, &e); code != 400 || e.Error.Field != "deadline" {
			t.Errorf("deadline %q: %d %+v; want 400 on deadline", bad, code, e.Error)
		}
	}
	if code := m.Do(alice, "POST", "/v1/agents/agent-0/drain", nil, nil); code != http.StatusForbidden {
		t.Errorf("drain by a user: %d; want 403", code)
	}
	var a v1.Agent
	m.Do(alice, "GET", "/v1/agents/agent-0", nil, &a)
	if !a.Schedulable || a.Drain != nil {
		t.Fatalf("refused drains changed the agent: %+v", a)
	}

	if code := m.Do(m.AdminToken, "POST", "/v1/agents/agent-0/drain?deadline=1h", nil, &a); code != 200 ||
		a.Schedulable || a.Drain == nil || a.Drain.Deadline == nil || a.Drain.Drained || a.Drain.RemainingKernels != 1 {
		t.Fatalf("drain with 1h: %d %+v %+v", code, a, a.Drain)
	}
	if err := m.Coordinator.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := get(t, m, alice, s.ID); got.Status != "RUNNING" {
		t.Fatalf("before the deadline the session is %s; want RUNNING", got.Status)
	}
	// Draining again with 0s moves the deadline to now, and what runs
	// there is ended by the request itself, not at the next sweep.
	if code := m.Do(m.AdminToken, "POST", "/v1/agents/agent-0/drain?deadline=0s", nil, &a); code != 200 {
		t.Fatalf("drain with 0s: %d", code)
	}
	if got := get(t, m, alice, s.ID); got.Status != "TERMINATING" && got.Status != "TERMINATED" {
		t.Fatalf("right after a drain with 0s the session is %s; want it ending", got.Status)
	}
	cycleUntil(s.ID, "TERMINATED")
	a = v1.Agent{}
	m.Do(alice, "GET", "/v1/agents/agent-0", nil, &a)
	if a.Drain == nil || !a.Drain.Drained || a.Drain.RemainingKernels != 0 || a.KernelCount != 0 {
		t.Fatalf("after the deadline: %+v %+v; want drained", a, a.Drain)
	}
	var hist v1.List[v1.History]
	m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/history", nil, &hist)
	if !slices.ContainsFunc(hist.Items, func(h v1.History) bool { return strings.Contains(h.Message, "agent agent-0 drained") }) {
		t.Errorf("history names no drain: %+v", hist.Items)
	}
	var after v1.Agent
	if code := m.Do(m.AdminToken, "POST", "/v1/agents/agent-0/uncordon", nil, &after); code != 200 || !after.Schedulable || after.Drain != nil {
		t.Fatalf("uncordon: %d %+v", code, after)
	}
}
