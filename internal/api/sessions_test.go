package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TestCreateValidation sends one bad field at a time: each is refused with
// 4xx naming the field, and nothing is written.
func TestCreateValidation(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p1")
		mine := create(t, m, alice, map[string]any{"image": "sleep"}).ID
		theirs := create(t, m, bob, map[string]any{"image": "sleep"}).ID
		if err := m.Store.PutResourceGroup(context.Background(), domain.ResourceGroup{Name: "batch-only",
			State: domain.GroupActive, Sequencer: "fifo", Selector: "concentrated", HeadOfLine: domain.HOLSkip,
			AllowedTypes: []domain.SessionType{domain.TypeBatch}}); err != nil {
			t.Fatal(err)
		}
		valid := func(mod func(map[string]any)) map[string]any {
			b := map[string]any{"name": "job", "type": "batch", "image": "sleep",
				"resources": map[string]any{"cpu": "1", "mem": "1g"}, "cluster_size": 1}
			mod(b)
			return b
		}
		for _, tc := range []struct {
			name  string
			body  any
			want  int
			field string
		}{
			{"empty body", "", 400, ""},
			{"not JSON", "{", 400, ""},
			{"not an object", "[1]", 400, ""},
			{"trailing data", `{"image":"sleep"} {}`, 400, ""},
			{"unknown field", valid(func(b map[string]any) { b["gpus"] = 1 }), 400, "gpus"},
			{"unknown nested field", `{"image":"sleep","resources":{"cpu":"1"},"extra":{"a":1}}`, 400, "extra"},
			{"wrong type", valid(func(b map[string]any) { b["cluster_size"] = "two" }), 400, "cluster_size"},
			{"fractional size", valid(func(b map[string]any) { b["cluster_size"] = 1.5 }), 400, "cluster_size"},
			{"number quantity", valid(func(b map[string]any) { b["resources"] = map[string]any{"mem": 4} }), 400, "resources.mem"},
			{"malformed quantity", valid(func(b map[string]any) { b["resources"] = map[string]any{"mem": "4 gigs"} }), 400, "resources.mem"},
			{"negative quantity", valid(func(b map[string]any) { b["resources"] = map[string]any{"cpu": "-1"} }), 400, "resources.cpu"},
			{"over-precise quantity", valid(func(b map[string]any) { b["resources"] = map[string]any{"cpu": "0.0001"} }), 400, "resources.cpu"},
			{"suffix on a count", valid(func(b map[string]any) { b["resources"] = map[string]any{"cpu": "2g"} }), 400, "resources.cpu"},
			{"unknown slot", valid(func(b map[string]any) { b["resources"] = map[string]any{"tpu": "1"} }), 400, "resources.tpu"},
			{"no image", valid(func(b map[string]any) { delete(b, "image") }), 400, "image"},
			{"image with a space", valid(func(b map[string]any) { b["image"] = "sl eep" }), 400, "image"},
			{"name with NUL", valid(func(b map[string]any) { b["name"] = "a\x00b" }), 400, "name"},
			{"env value with NUL", valid(func(b map[string]any) { b["env"] = map[string]string{"A": "\x00"} }), 400, "env.A"},
			{"command with NUL", valid(func(b map[string]any) { b["command"] = []string{"a", "\x00"} }), 400, "command[1]"},
			{"group with NUL", valid(func(b map[string]any) { b["resource_group"] = "default\x00" }), 400, "resource_group"},
			{"dependency with NUL", valid(func(b map[string]any) { b["depends_on"] = []string{"\x00"} }), 400, "depends_on[0]"},
			{"unknown type", valid(func(b map[string]any) { b["type"] = "cron" }), 400, "type"},
			{"cluster size zero", valid(func(b map[string]any) { b["cluster_size"] = 0 }), 400, "cluster_size"},
			{"cluster size 65", valid(func(b map[string]any) { b["cluster_size"] = 65 }), 400, "cluster_size"},
			{"unknown cluster mode", valid(func(b map[string]any) { b["cluster_mode"] = "mesh" }), 400, "cluster_mode"},
			{"priority too high", valid(func(b map[string]any) { b["priority"] = 101 }), 400, "priority"},
			{"bad architecture", valid(func(b map[string]any) { b["architecture"] = "X86 64" }), 400, "architecture"},
			{"unknown resource group", valid(func(b map[string]any) { b["resource_group"] = "gpu" }), 400, "resource_group"},
			{"type the group does not run", valid(func(b map[string]any) { b["resource_group"] = "batch-only"; b["type"] = "interactive" }), 400, "type"},
			{"missing dependency", valid(func(b map[string]any) { b["depends_on"] = []string{mine, "nope"} }), 400, "depends_on[1]"},
			{"foreign dependency", valid(func(b map[string]any) { b["depends_on"] = []string{theirs} }), 400, "depends_on[0]"},
			{"dependency twice", valid(func(b map[string]any) { b["depends_on"] = []string{mine, mine} }), 400, "depends_on[1]"},
			{"dependency not a string", valid(func(b map[string]any) { b["depends_on"] = []any{7} }), 400, "depends_on[0]"},
			{"unknown designated agent", valid(func(b map[string]any) { b["designated_agents"] = []string{"agent-0", "agent-9"} }), 400, "designated_agents[1]"},
			{"starts_at not RFC 3339", valid(func(b map[string]any) { b["starts_at"] = "tomorrow" }), 400, "starts_at"},
			{"starts_at date only", valid(func(b map[string]any) { b["starts_at"] = "2026-03-01" }), 400, "starts_at"},
			{"bad env name", valid(func(b map[string]any) { b["env"] = map[string]string{"1X": "y"} }), 400, "env.1X"},
			{"env PATH", valid(func(b map[string]any) { b["env"] = map[string]string{"PATH": "/tmp/evil"} }), 400, "env.PATH"},
			{"env over 64 KiB in all", valid(func(b map[string]any) {
				env := map[string]string{}
				for i := range 3 {
					env[fmt.Sprintf("BIG%d", i)] = strings.Repeat("x", 30<<10)
				}
				b["env"] = env
			}), 400, "env"},
			{"env LD_PRELOAD", valid(func(b map[string]any) { b["env"] = map[string]string{"LD_PRELOAD": "/tmp/x.so"} }), 400, "env.LD_PRELOAD"},
			{"env BASH_ENV", valid(func(b map[string]any) { b["env"] = map[string]string{"BASH_ENV": "/tmp/x"} }), 400, "env.BASH_ENV"},
			{"env runtime fact", valid(func(b map[string]any) { b["env"] = map[string]string{"SOKOVAN_KERNEL_ID": "x"} }), 400, "env.SOKOVAN_KERNEL_ID"},
			{"env GPU choice", valid(func(b map[string]any) { b["env"] = map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"} }), 400, "env.NVIDIA_VISIBLE_DEVICES"},
			{"zero cpu", valid(func(b map[string]any) { b["resources"] = map[string]any{"cpu": "0", "mem": "1g"} }), 400, "resources.cpu"},
			{"zero request", valid(func(b map[string]any) { b["resources"] = map[string]any{"cpu": "0", "mem": "0"} }), 400, "resources.cpu"},
			{"mem below the floor", valid(func(b map[string]any) { b["resources"] = map[string]any{"mem": "1k"} }), 400, "resources.mem"},
			{"gang of zeros", valid(func(b map[string]any) {
				b["resources"] = map[string]any{"cpu": "0", "mem": "0"}
				b["cluster_size"] = 64
				b["cluster_mode"] = "multi-node"
			}), 400, "resources.cpu"},
			{"env value not a string", valid(func(b map[string]any) { b["env"] = map[string]any{"X": true} }), 400, "env.X"},
			{"command not a list", valid(func(b map[string]any) { b["command"] = "sleep 1" }), 400, "command"},
			{"body over 1 MiB", valid(func(b map[string]any) { b["name"] = strings.Repeat("x", 1<<20) }), 413, ""},
		} {
			before := stored(t, m)
			var e v1.ErrorResponse
			code, raw := m.Raw(alice, "POST", "/v1/sessions", tc.body)
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Errorf("%s: answer is not JSON: %s", tc.name, raw)
				continue
			}
			if code != tc.want || e.Error.Field != tc.field {
				t.Errorf("%s: %d field %q, want %d field %q (%s)", tc.name, code, e.Error.Field, tc.want, tc.field, e.Error.Message)
			}
			if e.Error.Code == "" || e.Error.Message == "" {
				t.Errorf("%s: error without code or message: %s", tc.name, raw)
			}
			if after := stored(t, m); after != before {
				t.Errorf("%s: the refused request wrote: %+v → %+v", tc.name, before, after)
			}
		}

		// A full request is accepted with every default filled in.
		s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]any{"cpu": "0.5", "mem": "512m"},
			"cluster_size": 3, "cluster_mode": "multi-node", "depends_on": []string{mine},
			"designated_agents": []string{"agent-0", "agent-1"}, "starts_at": "2026-03-01T12:00:00+09:00",
			"command": []string{"sleep", "1"}, "env": map[string]string{"A": "b"}})
		if s.Type != "interactive" || s.ResourceGroup != "default" || s.Architecture != "x86_64" || s.Priority != 10 ||
			s.RequestedSlots["cpu"] != "0.5" || s.RequestedSlots["mem"] != "512m" || len(s.Kernels) != 3 {
			t.Errorf("defaults: %+v", s)
		}
		for i, k := range s.Kernels {
			role := "sub"
			if i == 0 {
				role = "main"
			}
			if k.ID != s.ID+"-k"+string(rune('0'+i)) || k.ClusterRole != role || k.ClusterIdx != i || k.Status != "PENDING" {
				t.Errorf("kernel %d: %+v", i, k)
			}
		}
		if len(s.ID) != 36 || s.ID[14] != '4' {
			t.Errorf("session id %q is not a UUID v4", s.ID)
		}
	})
}

// TestLifecycle follows a session from submit to RUNNING on the event
// stream, then ends it; and cancels a PENDING one.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine})
		alice := m.User("alice", "user", "p1")
		all := openStream(t, m, alice, "", "")
		s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1", "mem": "1g"}, "cluster_size": 2})

		// The session's own changes arrive in order and end at RUNNING.
		var path []string
		for len(path) == 0 || path[len(path)-1] != "RUNNING" {
			ev := all.next(20 * time.Second)
			c := decodeChange(t, ev)
			if ev.ID == "" || c.SessionID != s.ID || c.Owner != "alice" {
				t.Fatalf("event %+v", ev)
			}
			if ev.Event == "session" {
				if len(path) > 0 && path[len(path)-1] != c.From {
					t.Fatalf("session change %s → %s after %v", c.From, c.To, path)
				}
				path = append(path, c.To)
			}
		}
		if path[0] != "PENDING" {
			t.Errorf("session path %v does not start at creation", path)
		}
		got := get(t, m, alice, s.ID)
		for _, k := range got.Kernels {
			if k.Status != "RUNNING" || k.Agent == "" {
				t.Errorf("kernel of a RUNNING session: %+v", k)
			}
		}
		var hist v1.List[v1.History]
		m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/history", nil, &hist)
		if len(hist.Items) == 0 || hist.Items[0].Handler != "ScheduleNewSessions" || hist.Items[0].Result != "SUCCESS" {
			t.Errorf("history: %+v", hist.Items)
		}
		var why v1.Why
		if m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/why", nil, &why); why.Status != "RUNNING" || len(why.Blockers) != 0 || why.Blockers == nil {
			t.Errorf("why of a running session: %+v", why)
		}

		// RUNNING → TERMINATING at once, TERMINATED when the kernels are gone.
		var del v1.Session
		if code := m.Do(alice, "DELETE", "/v1/sessions/"+s.ID, nil, &del); code != http.StatusAccepted || del.Status != "TERMINATING" {
			t.Fatalf("delete running: %d %s", code, del.Status)
		}
		waitStatus(t, m, alice, s.ID, "TERMINATED")
		var e v1.ErrorResponse
		if code := m.Do(alice, "DELETE", "/v1/sessions/"+s.ID, nil, &e); code != http.StatusConflict {
			t.Errorf("delete an ended session: %d %+v", code, e)
		}

		// PENDING → CANCELLED at once: a session that starts later stays
		// PENDING until then.
		big := create(t, m, alice, map[string]any{"image": "sleep", "starts_at": "2099-01-01T00:00:00Z"})
		if code := m.Do(alice, "DELETE", "/v1/sessions/"+big.ID, nil, &del); code != http.StatusAccepted || del.Status != "CANCELLED" {
			t.Fatalf("delete pending: %d %s", code, del.Status)
		}
		for _, k := range del.Kernels {
			if k.Status != "CANCELLED" {
				t.Errorf("kernel of a cancelled session: %+v", k)
			}
		}

		// ?force must be a boolean, and a refused delete changes nothing;
		// force=true kills the kernels at once, so the answer already shows
		// them TERMINATED.
		forced := create(t, m, alice, map[string]any{"image": "sleep"})
		waitStatus(t, m, alice, forced.ID, "RUNNING")
		before := stored(t, m)
		if code := m.Do(alice, "DELETE", "/v1/sessions/"+forced.ID+"?force=maybe", nil, &e); code != http.StatusBadRequest || e.Error.Field != "force" {
			t.Fatalf("delete ?force=maybe: %d %+v", code, e)
		}
		if after := stored(t, m); after != before {
			t.Fatalf("a refused delete wrote: %+v → %+v", before, after)
		}
		del = v1.Session{}
		if code := m.Do(alice, "DELETE", "/v1/sessions/"+forced.ID+"?force=true", nil, &del); code != http.StatusAccepted ||
			(del.Status != "TERMINATING" && del.Status != "TERMINATED") || len(del.Kernels) != 1 || del.Kernels[0].Status != "TERMINATED" {
			t.Fatalf("delete ?force=true: %d %+v", code, del)
		}
		waitStatus(t, m, alice, forced.ID, "TERMINATED")

		// A batch job that exits 0 ends TERMINATED with success.
		job := create(t, m, alice, map[string]any{"image": "exit:0", "type": "batch"})
		if done := waitStatus(t, m, alice, job.ID, "TERMINATED"); done.Outcome != "success" || *done.Kernels[0].ExitCode != 0 {
			t.Errorf("finished job: %+v", done)
		}
	})
}

// TestWhyQuota shows a quota end to end: the scheduler keeps the session
// PENDING, and why names the scope and slot with the numbers.
func TestWhyQuota(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine})
		alice := m.User("alice", "user", "p1")
		var p v1.Policy
		if code := m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_slots": map[string]string{"cpu": "3.5"}}, &p); code != 200 ||
			p.Scope != "user" || p.MaxSlots["cpu"] != "3.5" {
			t.Fatalf("put policy: %d %+v", code, p)
		}
		first := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "2", "mem": "1g"}})
		waitStatus(t, m, alice, first.ID, "RUNNING")
		// 2 more would make 4 of the 3.5 allowed: 1.5 is left.
		s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "2", "mem": "1g"}})
		// Wait for a real round to have skipped it.
		apitest.Eventually(t, 20*time.Second, "a scheduling round", func() bool {
			var hist v1.List[v1.History]
			m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/history", nil, &hist)
			return len(hist.Items) > 0 && hist.Items[0].Result == "SKIPPED"
		})
		var why v1.Why
		if code := m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/why", nil, &why); code != 200 {
			t.Fatalf("why: %d", code)
		}
		if why.Status != "PENDING" || len(why.Blockers) != 1 {
			t.Fatalf("why: %+v", why)
		}
		b := why.Blockers[0]
		if b.Kind != "quota" || b.Scope != "user:alice" || b.Slot != "cpu" || b.Requested != "2" || b.Available != "1.5" ||
			b.ExceedsCapacity || b.Message == "" {
			t.Errorf("quota blocker: %+v", b)
		}
		// why is shared among callers while the group's input stands, but
		// a policy written is seen by the very next why.
		m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_slots": map[string]string{"cpu": "3"}}, nil)
		if m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/why", nil, &why); len(why.Blockers) != 1 || why.Blockers[0].Available != "1" {
			t.Errorf("why right after the limit fell to 3: %+v, want 1 cpu left", why.Blockers)
		}
		// Raising the limit lets it run.
		m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_slots": map[string]string{"cpu": "4"}}, nil)
		// A request over the limit itself is refused at submit.
		var refused v1.ErrorResponse
		if code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "5"}}, &refused); code != 400 ||
			refused.Error.Field != "resources.cpu" || !strings.Contains(refused.Error.Message, "user alice's policy") {
			t.Errorf("a request over the quota: %d %+v", code, refused)
		}
		waitStatus(t, m, alice, s.ID, "RUNNING")

		var e v1.ErrorResponse
		if code := m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_slots": map[string]string{"gpu": "1"}}, &e); code != 400 || e.Error.Field != "max_slots.gpu" {
			t.Errorf("policy with an unknown slot: %d %+v", code, e)
		}
		if code := m.Do(m.AdminToken, "PUT", "/v1/policies/team/x", map[string]any{}, &e); code != 400 || e.Error.Field != "scope" {
			t.Errorf("policy of an unknown scope: %d %+v", code, e)
		}
		if code := m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_pending_sessions": -1}, &e); code != 400 || e.Error.Field != "max_pending_sessions" {
			t.Errorf("negative cap: %d %+v", code, e)
		}
	})
}

func TestPendingCap(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p1")
		// A start time far ahead keeps a session PENDING.
		m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_pending_sessions": 2}, nil)
		for range 2 {
			create(t, m, alice, map[string]any{"image": "sleep", "starts_at": "2099-01-01T00:00:00Z"})
		}
		before := stored(t, m)
		var e v1.ErrorResponse
		code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}}, &e)
		if code != http.StatusTooManyRequests || e.Error.Code != "resource_exhausted" || !strings.Contains(e.Error.Message, "max_pending_sessions 2") {
			t.Errorf("third pending session: %d %+v", code, e)
		}
		if after := stored(t, m); after != before {
			t.Errorf("the refused submit wrote: %+v → %+v", before, after)
		}
		// Concurrent submits cannot overshoot a cap together.
		carol := m.User("carol", "user", "p2")
		m.Do(m.AdminToken, "PUT", "/v1/policies/user/carol", map[string]any{"max_pending_sessions": 3}, nil)
		codes := make(chan int, 10)
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := m.Raw(carol, "POST", "/v1/sessions", map[string]any{"image": "sleep", "starts_at": "2099-01-01T00:00:00Z"})
				codes <- code
			}()
		}
		wg.Wait()
		close(codes)
		count := map[int]int{}
		for c := range codes {
			count[c]++
		}
		if count[http.StatusCreated] != 3 || count[http.StatusTooManyRequests] != 7 {
			t.Errorf("10 concurrent submits under a cap of 3: %v", count)
		}

		// Others are not capped by alice's policy; a project cap counts the
		// whole project.
		create(t, m, bob, map[string]any{"image": "sleep"})
		m.Do(m.AdminToken, "PUT", "/v1/policies/project/p1", map[string]any{"max_pending_sessions": 2}, nil)
		if code := m.Do(bob, "POST", "/v1/sessions", map[string]any{"image": "sleep", "starts_at": "2099-01-01T00:00:00Z"}, &e); code != http.StatusTooManyRequests {
			t.Errorf("project cap: %d %+v", code, e)
		}
	})
}

// TestPendingCapAcrossManagers: two managers (two API servers, each over
// its own store instance) on one PostgreSQL database admit, between them,
// exactly a cap's worth of concurrent submits.
func TestPendingCapAcrossManagers(t *testing.T) {
	t.Parallel()
	m1 := apitest.New(t, apitest.Options{Engine: "postgres", Manual: true})
	m2 := apitest.New(t, apitest.Options{Engine: "postgres", Manual: true, Share: m1})
	carol := m1.User("carol", "user", "p2")
	// Manual managers never schedule: every accepted session stays PENDING.
	m2.Do(m2.AdminToken, "PUT", "/v1/policies/user/carol", map[string]any{"max_pending_sessions": 3}, nil)
	const submits = 20
	codes := make([]int, submits)
	refusals := make([]v1.ErrorResponse, submits)
	var wg sync.WaitGroup
	for i, m := range slices.Repeat([]*apitest.Manager{m1, m2}, submits/2) {
		wg.Go(func() {
			codes[i] = m.Do(carol, "POST", "/v1/sessions", map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}}, &refusals[i])
		})
	}
	wg.Wait()
	count := map[int]int{}
	for i, c := range codes {
		count[c]++
		if c == http.StatusTooManyRequests && !strings.Contains(refusals[i].Error.Message, "user carol already has 3 PENDING sessions") {
			t.Errorf("refusal %d: %+v", i, refusals[i])
		}
	}
	if count[http.StatusCreated] != 3 || count[http.StatusTooManyRequests] != submits-3 {
		t.Errorf("%d concurrent submits through two managers under a cap of 3: %v", submits, count)
	}
	pending, err := m1.Store.ListSessions(t.Context(), store.SessionFilter{User: "carol", Statuses: []domain.SessionStatus{domain.SessionPending}})
	if err != nil || len(pending) != 3 {
		t.Errorf("carol's pending sessions: %d, %v", len(pending), err)
	}
}

// TestSessionListPages: a listing is read page by page with after= and
// next, and leaves out what may be large (command, env), which showing
// the one session still has.
func TestSessionListPages(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	var want []string
	for range 5 {
		s := create(t, m, alice, map[string]any{"image": "sleep", "command": []string{"sleep", "9"}, "env": map[string]string{"A": "b"}})
		want = append(want, s.ID)
	}
	type page struct {
		Items []struct {
			ID      string            `json:"id"`
			Command []string          `json:"command"`
			Env     map[string]string `json:"env"`
		} `json:"items"`
		Next *string `json:"next"`
	}
	var got []string
	path := "/v1/sessions?limit=2"
	for pages := 0; ; pages++ {
		var p page
		if code, raw := m.Raw(alice, "GET", path, nil); code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, raw)
		} else if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Items {
			got = append(got, s.ID)
			if len(s.Command) != 0 || len(s.Env) != 0 {
				t.Errorf("listed session %s carries command %q and env %v", s.ID, s.Command, s.Env)
			}
		}
		// 5 sessions at 2 a page: two full pages with a next, then one of 1
		// without.
		if full := len(p.Items) == 2; full != (p.Next != nil) || pages > 2 {
			t.Fatalf("page %d: %d items, next %v", pages, len(p.Items), p.Next)
		}
		if p.Next == nil {
			break
		}
		path = "/v1/sessions?limit=2&after=" + url.QueryEscape(*p.Next)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions page by page (-want +got):\n%s", diff)
	}
	var shown struct {
		Command []string          `json:"command"`
		Env     map[string]string `json:"env"`
	}
	if code := m.Do(alice, "GET", "/v1/sessions/"+want[0], nil, &shown); code != http.StatusOK ||
		!slices.Equal(shown.Command, []string{"sleep", "9"}) || shown.Env["A"] != "b" {
		t.Errorf("GET one session: %d, command %q, env %v", code, shown.Command, shown.Env)
	}
	var e v1.ErrorResponse
	if code := m.Do(alice, "GET", "/v1/sessions?after=a%20b", nil, &e); code != http.StatusBadRequest || e.Error.Field != "after" {
		t.Errorf("after with a space: %d %+v", code, e)
	}
}

func TestSessionList(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	alice := m.User("alice", "user", "p1")
	a := create(t, m, alice, map[string]any{"image": "sleep", "starts_at": "2099-01-01T00:00:00Z"})
	b := create(t, m, alice, map[string]any{"image": "sleep"})
	waitStatus(t, m, alice, b.ID, "RUNNING")
	var list struct{ Items []v1.Session }
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{a.ID, b.ID}},
		{"?status=PENDING", []string{a.ID}},
		{"?status=running,pending", []string{a.ID, b.ID}},
		{"?status=RUNNING&limit=5", []string{b.ID}},
		{"?limit=1", []string{a.ID}},
	} {
		m.Do(alice, "GET", "/v1/sessions"+tc.query, nil, &list)
		var got []string
		for _, s := range list.Items {
			got = append(got, s.ID)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("list%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	if len(list.Items) == 1 && len(list.Items[0].Kernels) != 1 {
		t.Errorf("listed session without its kernels: %+v", list.Items[0])
	}
	for _, q := range []string{"?status=NAPPING", "?limit=0", "?limit=x"} {
		var e v1.ErrorResponse
		if code := m.Do(alice, "GET", "/v1/sessions"+q, nil, &e); code != 400 || e.Error.Field == "" {
			t.Errorf("list%s: %d %+v", q, code, e)
		}
	}
}

func TestLogs(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	m := apitest.New(t, apitest.Options{Logs: func(_ context.Context, agent domain.AgentID, k domain.KernelID, _ int64) (ioReadCloser, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, string(agent)+"/"+string(k))
		return nopCloser{strings.NewReader("line 1\nline 2\n")}, nil
	}})
	alice := m.User("alice", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep", "cluster_size": 2})
	pending := create(t, m, alice, map[string]any{"image": "sleep", "starts_at": "2099-01-01T00:00:00Z"})
	running := waitStatus(t, m, alice, s.ID, "RUNNING")
	code, body := m.Raw(alice, "GET", "/v1/sessions/"+s.ID+"/logs?kernel=1", nil)
	if code != 200 || string(body) != "line 1\nline 2\n" {
		t.Errorf("logs: %d %q", code, body)
	}
	mu.Lock()
	if want := running.Kernels[1].Agent + "/" + running.Kernels[1].ID; len(asked) != 1 || asked[0] != want {
		t.Errorf("asked agents for %v, want %s", asked, want)
	}
	mu.Unlock()
	if code, _ := m.Raw(alice, "GET", "/v1/sessions/"+s.ID+"/logs?kernel=7", nil); code != 404 {
		t.Errorf("logs of a missing kernel: %d", code)
	}
	if code, _ := m.Raw(alice, "GET", "/v1/sessions/"+pending.ID+"/logs", nil); code != 409 {
		t.Errorf("logs of an unplaced kernel: %d", code)
	}
	m.Do(alice, "DELETE", "/v1/sessions/"+pending.ID, nil, nil)
	if code, raw := m.Raw(alice, "GET", "/v1/sessions/"+pending.ID+"/logs", nil); code != 409 ||
		!strings.Contains(string(raw), "ended CANCELLED before") || !strings.Contains(string(raw), "never ran") {
		t.Errorf("logs of a session cancelled before it ran: %d %s", code, raw)
	}

	none := apitest.New(t, apitest.Options{})
	tok := none.User("alice", "user", "p1")
	s2 := create(t, none, tok, map[string]any{"image": "sleep"})
	if code, _ := none.Raw(tok, "GET", "/v1/sessions/"+s2.ID+"/logs", nil); code != http.StatusNotImplemented {
		t.Errorf("logs without a logs hook: %d", code)
	}
}

func TestKernelIDsFollowSessions(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep", "cluster_size": 2})
	ks, err := m.Store.ListKernels(context.Background(), store.KernelFilter{Sessions: []domain.SessionID{domain.SessionID(s.ID)}})
	if err != nil || len(ks) != 2 || string(ks[1].ID) != s.ID+"-k1" || ks[1].ClusterRole != domain.RoleSub {
		t.Errorf("stored kernels: %+v, %v", ks, err)
	}
}

func TestSessionWithoutResourcesGetsTheDefaultRequest(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Engine: "sqlite", Manual: true})
	alice := m.User("alice", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep"})
	if s.RequestedSlots["cpu"] != "1" || s.RequestedSlots["mem"] != "1g" {
		t.Fatalf("requested %v, want the default cpu 1, mem 1g", s.RequestedSlots)
	}
	// A partial request keeps what it names and gets the default for the
	// rest: mem 1g, so the kernel has a memory limit and quotas charge it.
	s = create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]any{"cpu": "0.5"}})
	if s.RequestedSlots["cpu"] != "0.5" || s.RequestedSlots["mem"] != "1g" {
		t.Fatalf("requested %v, want cpu 0.5 as asked and the default mem 1g", s.RequestedSlots)
	}
	s = create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]any{"mem": "64m", "cuda.device": "0"}})
	if s.RequestedSlots["cpu"] != "1" || s.RequestedSlots["mem"] != "64m" || s.RequestedSlots["cuda.device"] != "" {
		t.Fatalf("requested %v, want the default cpu 1 and mem 64m as asked", s.RequestedSlots)
	}
}

// TestWhyProgress: a placed session that has not started says what it
// waits for, until when, and what failed last.
func TestWhyProgress(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine})
		alice := m.User("alice", "user", "p1")
		s := create(t, m, alice, map[string]any{"image": apitest.SlowPull, "cluster_size": 2, "cluster_mode": "multi-node"})
		got := waitStatus(t, m, alice, s.ID, "PREPARING")
		var why v1.Why
		if code := m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/why", nil, &why); code != http.StatusOK {
			t.Fatalf("why: %d", code)
		}
		p := why.Progress
		if why.Status != "PREPARING" || len(why.Blockers) != 0 || p == nil {
			t.Fatalf("why of a preparing session: %+v", why)
		}
		if p.Bound != "15m0s" || p.Deadline == nil || !p.Deadline.Equal(p.Since.Add(15*time.Minute)) {
			t.Errorf("bound %q, since %v, deadline %v; want 15m after since", p.Bound, p.Since, p.Deadline)
		}
		if len(p.WaitingFor) != 2 {
			t.Fatalf("waiting for %q, want a line per kernel", p.WaitingFor)
		}
		for i, line := range p.WaitingFor {
			k := got.Kernels[i]
			if !strings.Contains(line, k.ID) || !strings.Contains(line, apitest.SlowPull) || !strings.Contains(line, k.Agent) {
				t.Errorf("line %q does not name kernel %s, its image and agent %s", line, k.ID, k.Agent)
			}
		}
		if p.LastFailure != "" {
			t.Errorf("last failure %q of a session whose attempts all succeeded", p.LastFailure)
		}

		// A RUNNING session has nothing to explain.
		run := create(t, m, alice, map[string]any{"image": "sleep"})
		waitStatus(t, m, alice, run.ID, "RUNNING")
		why = v1.Why{}
		if m.Do(alice, "GET", "/v1/sessions/"+run.ID+"/why", nil, &why); why.Progress != nil {
			t.Errorf("why of a running session has progress %+v", why.Progress)
		}
	})
}

// TestWhyLastFailure: a failed attempt shows in progress until the next
// attempt.
func TestWhyLastFailure(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "no-such-image"})
	if err := m.Coordinator.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	var why v1.Why
	m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/why", nil, &why)
	if why.Progress == nil || !strings.Contains(why.Progress.LastFailure, "attempt 1 of 3 failed") ||
		!strings.Contains(why.Progress.LastFailure, "no-such-image") {
		t.Fatalf("why after a failed pull: %+v", why)
	}
}
