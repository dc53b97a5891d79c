package api_test

import (
	"net/http"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestQueue: the group's PENDING sessions in the order the round tries
// them, with what it would do; users see only their own sessions, with
// their positions in the whole queue.
func TestQueue(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true, Agents: 1})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p2")
		small := create(t, m, alice, map[string]any{"image": "sleep", "name": "small", "resources": map[string]string{"cpu": "4"}})
		big := create(t, m, alice, map[string]any{"image": "sleep", "name": "big", "resources": map[string]string{"cpu": "8"}})
		bobs := create(t, m, bob, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "2"}})
		urgent := create(t, m, alice, map[string]any{"image": "sleep", "priority": 50, "resources": map[string]string{"cpu": "1"}})

		type row struct {
			pos     int
			id, out string
		}
		read := func(token string) (v1.Queue, []row) {
			t.Helper()
			var q v1.Queue
			if code := m.Do(token, "GET", "/v1/resource-groups/default/queue", nil, &q); code != http.StatusOK {
				t.Fatalf("queue: %d", code)
			}
			var rows []row
			for _, e := range q.Items {
				rows = append(rows, row{e.Position, e.ID, e.Outcome})
				if e.EstimatedStart != nil {
					t.Errorf("estimated_start is set: %v", e.EstimatedStart)
				}
			}
			return q, rows
		}
		// Priority first, then FIFO; the 8-cpu session does not fit beside
		// the 4 and 1 placed before it (one agent of 8), bob's 2 does.
		q, rows := read(m.AdminToken)
		want := []row{{1, urgent.ID, "start"}, {2, small.ID, "start"}, {3, big.ID, "wait"}, {4, bobs.ID, "start"}}
		if q.Pending != 4 || q.Hidden != 0 || q.Sequencer != "fifo" || len(rows) != len(want) {
			t.Fatalf("admin queue: %+v", q)
		}
		for i := range want {
			if rows[i] != want[i] {
				t.Errorf("admin queue row %d: %+v, want %+v", i, rows[i], want[i])
			}
		}
		if b := q.Items[2].Blockers; len(b) == 0 || b[0].Kind != "capacity" {
			t.Errorf("big's blockers: %+v, want capacity", b)
		}

		q, rows = read(alice)
		if q.Pending != 4 || q.Hidden != 1 || len(rows) != 3 || rows[2] != (row{3, big.ID, "wait"}) {
			t.Errorf("alice's queue: hidden %d, %+v", q.Hidden, rows)
		}
		q, rows = read(bob)
		if q.Hidden != 3 || len(rows) != 1 || rows[0] != (row{4, bobs.ID, "start"}) {
			t.Errorf("bob's queue: hidden %d, %+v", q.Hidden, rows)
		}
		if code := m.Do(bob, "GET", "/v1/resource-groups/nope/queue", nil, nil); code != http.StatusNotFound {
			t.Errorf("queue of a missing group: %d, want 404", code)
		}
	})
}

// TestUsage: what the caller holds and asks for, against its policies.
func TestUsage(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p1")
	for _, p := range []struct {
		path string
		body v1.PolicyRequest
	}{
		{"/v1/policies/user/alice", v1.PolicyRequest{MaxSlots: map[string]string{"cpu": "6"}, MaxPendingSessions: 5}},
		{"/v1/policies/project/p1", v1.PolicyRequest{MaxConcurrentSessions: 4}},
	} {
		if code := m.Do(m.AdminToken, "PUT", p.path, p.body, nil); code != http.StatusOK {
			t.Fatalf("PUT %s: %d", p.path, code)
		}
	}
	run := create(t, m, alice, map[string]any{"image": "sleep", "cluster_size": 2, "cluster_mode": "multi-node",
		"resources": map[string]string{"cpu": "2", "mem": "1g"}})
	waitStatus(t, m, alice, run.ID, "RUNNING")
	bobs := create(t, m, bob, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
	waitStatus(t, m, bob, bobs.ID, "RUNNING")
	create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "4"}}) // waits: quota

	var u v1.Usage
	if code := m.Do(alice, "GET", "/v1/me/usage", nil, &u); code != http.StatusOK {
		t.Fatalf("usage: %d", code)
	}
	// Two kernels of 2 cpu and 1g each run; the 4-cpu one is pending.
	if u.User != "alice" || u.Occupied["cpu"] != "4" || u.Occupied["mem"] != "2g" || u.Pending["cpu"] != "4" ||
		u.RunningSessions != 1 || u.PendingSessions != 1 {
		t.Errorf("usage: %+v", u)
	}
	if len(u.Limits) != 2 {
		t.Fatalf("limits: %+v, want the user's and the project's", u.Limits)
	}
	if l := u.Limits[0]; l.Scope != "user" || l.MaxSlots["cpu"] != "6" || l.Used["cpu"] != "4" || l.MaxPendingSessions != 5 || l.PendingSessions != 1 {
		t.Errorf("user limit: %+v", l)
	}
	// The project counts bob's session too.
	if l := u.Limits[1]; l.Scope != "project" || l.MaxConcurrentSessions != 4 || l.ConcurrentSessions != 2 {
		t.Errorf("project limit: %+v", l)
	}
}

// TestListUsers: admins list users; users may not.
func TestListUsers(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	m.User("bob", "user", "p2")
	var list v1.List[v1.User]
	if code := m.Do(m.AdminToken, "GET", "/v1/users", nil, &list); code != http.StatusOK {
		t.Fatalf("GET /v1/users: %d", code)
	}
	var names []string
	for _, u := range list.Items {
		names = append(names, u.Name)
	}
	if len(names) != 3 || names[1] != "alice" || names[2] != "bob" {
		t.Errorf("users: %v, want admin, alice, bob by name", names)
	}
	if code := m.Do(alice, "GET", "/v1/users", nil, nil); code != http.StatusForbidden {
		t.Errorf("a user listing users: %d, want 403", code)
	}
}
