package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func getJob(t *testing.T, m *apitest.Manager, token, ref string) v1.Job {
	t.Helper()
	var j v1.Job
	if code := m.Do(token, "GET", "/v1/jobs/"+ref, nil, &j); code != http.StatusOK {
		t.Fatalf("get job %s: %d", ref, code)
	}
	return j
}

// A job of min 2 through the API: its first member waits with a gang
// blocker; the second completes the gang and both run; cancelling the job
// ends its members and the job fails.
func TestJobsThroughAPI(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p1")
		var j v1.Job
		if code := m.Do(alice, "POST", "/v1/jobs", map[string]any{"name": "spark", "min_available": 2,
			"permit_timeout": "90s", "failure_policy": "fail"}, &j); code != http.StatusCreated ||
			j.State != "NEW" || j.MinAvailable != 2 || j.PermitTimeout != "90s" || j.FailurePolicy != "fail" {
			t.Fatalf("create job: %d %+v", code, j)
		}
		driver := create(t, m, alice, map[string]any{"image": "sleep", "job": "spark", "resources": map[string]string{"cpu": "1"}})
		if driver.Job != j.ID {
			t.Fatalf("member's job %q, want %s", driver.Job, j.ID)
		}
		var why v1.Why
		apitest.Eventually(t, 10*time.Second, "a gang blocker", func() bool {
			m.Do(alice, "GET", "/v1/sessions/"+driver.ID+"/why", nil, &why)
			return len(why.Blockers) > 0 && why.Blockers[0].Kind == "gang" &&
				strings.Contains(why.Blockers[0].Message, "1 of 2 members submitted")
		})
		exec := create(t, m, alice, map[string]any{"image": "sleep", "job": j.ID, "resources": map[string]string{"cpu": "1"}})
		waitStatus(t, m, alice, driver.ID, "RUNNING")
		waitStatus(t, m, alice, exec.ID, "RUNNING")
		apitest.Eventually(t, 10*time.Second, "job RUNNING", func() bool { return getJob(t, m, alice, "spark").State == "RUNNING" })
		got := getJob(t, m, alice, j.ID)
		if len(got.Members) != 2 || got.Submitted != 2 || got.Placed != 2 || len(got.History) != 3 {
			t.Fatalf("job: %+v", got)
		}
		var list v1.List[v1.Job]
		if m.Do(alice, "GET", "/v1/jobs", nil, &list); len(list.Items) != 1 {
			t.Fatalf("alice's jobs: %+v", list.Items)
		}
		if m.Do(bob, "GET", "/v1/jobs", nil, &list); len(list.Items) != 0 {
			t.Fatalf("bob sees %+v", list.Items)
		}
		if code := m.Do(bob, "GET", "/v1/jobs/"+j.ID, nil, nil); code != http.StatusNotFound {
			t.Fatalf("bob reads alice's job: %d", code)
		}
		var e v1.ErrorResponse
		if code := m.Do(bob, "POST", "/v1/sessions", map[string]any{"image": "sleep", "job": j.ID}, &e); code != 400 || e.Error.Field != "job" {
			t.Fatalf("bob joins alice's job: %d %+v", code, e.Error)
		}

		if code := m.Do(alice, "DELETE", "/v1/jobs/spark", nil, &got); code != http.StatusAccepted || got.State != "FAILING" {
			t.Fatalf("cancel: %d %+v", code, got)
		}
		waitStatus(t, m, alice, driver.ID, "TERMINATED")
		waitStatus(t, m, alice, exec.ID, "TERMINATED")
		apitest.Eventually(t, 10*time.Second, "job FAILED", func() bool { return getJob(t, m, alice, j.ID).State == "FAILED" })
		e = v1.ErrorResponse{}
		if code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "job": j.ID}, &e); code != 409 || e.Error.Field != "job" {
			t.Fatalf("joining a failed job: %d %+v", code, e.Error)
		}
		if code := m.Do(alice, "DELETE", "/v1/jobs/"+j.ID, nil, nil); code != http.StatusConflict {
			t.Fatalf("cancelling a failed job: %d", code)
		}
	})
}

// Bad job requests are refused naming the field and store nothing; a NEW
// job whose first member is refused at admission is REJECTED.
func TestJobAdmission(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "x", "min_available": 0}, "min_available"},
		{map[string]any{"name": "x", "permit_timeout": "soon"}, "permit_timeout"},
		{map[string]any{"name": "x", "permit_timeout": "-1s"}, "permit_timeout"},
		{map[string]any{"name": "x", "failure_policy": "retry"}, "failure_policy"},
		{map[string]any{"name": "x", "min_available": "2"}, "min_available"},
	} {
		var e v1.ErrorResponse
		if code := m.Do(alice, "POST", "/v1/jobs", tc.body, &e); code != 400 || e.Error.Field != tc.field {
			t.Errorf("%v: %d %+v; want 400 on %s", tc.body, code, e.Error, tc.field)
		}
	}
	var list v1.List[v1.Job]
	if m.Do(alice, "GET", "/v1/jobs", nil, &list); len(list.Items) != 0 {
		t.Fatalf("refused requests stored %+v", list.Items)
	}
	var e v1.ErrorResponse
	if code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "job": "nope"}, &e); code != 400 || e.Error.Field != "job" {
		t.Fatalf("unknown job: %d %+v", code, e.Error)
	}
	// A gang cannot span resource groups.
	if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/other", map[string]any{}, nil); code != http.StatusCreated {
		t.Fatalf("create group: %d", code)
	}
	var split v1.Job
	m.Do(alice, "POST", "/v1/jobs", map[string]any{"name": "split", "min_available": 2}, &split)
	create(t, m, alice, map[string]any{"image": "sleep", "job": "split"})
	e = v1.ErrorResponse{}
	if code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "job": "split",
		"resource_group": "other"}, &e); code != 400 || e.Error.Field != "resource_group" {
		t.Fatalf("member in another group: %d %+v", code, e.Error)
	}
	var j v1.Job
	m.Do(alice, "POST", "/v1/jobs", map[string]any{"name": "r"}, &j)
	if code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "job": "r",
		"resources": map[string]string{"cpu": "lots"}}, &e); code != 400 {
		t.Fatalf("bad member: %d", code)
	}
	if got := getJob(t, m, alice, j.ID); got.State != "REJECTED" || len(got.History) != 1 || got.History[0].Event != "Reject" {
		t.Fatalf("after its first member was refused: %+v", got)
	}
}

// Cancelling raises seed 003's Fail from NEW, ACCEPTED and COMPLETING; the
// coordinator then finds nothing live and the job is FAILED.
func TestJobCancelFromEveryLiveState(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	ctx := t.Context()
	cycle := func() {
		t.Helper()
		if err := m.Coordinator.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	newJob := func(name string) v1.Job {
		var j v1.Job
		if code := m.Do(alice, "POST", "/v1/jobs", map[string]any{"name": name, "min_available": 2}, &j); code != http.StatusCreated {
			t.Fatalf("create %s: %d", name, code)
		}
		return j
	}
	fresh := newJob("fresh")
	accepted := newJob("accepted")
	member := create(t, m, alice, map[string]any{"image": "sleep", "job": "accepted"})
	completing := newJob("completing")
	gone := create(t, m, alice, map[string]any{"image": "sleep", "job": "completing"})
	if code := m.Do(alice, "DELETE", "/v1/sessions/"+gone.ID, nil, nil); code != http.StatusAccepted {
		t.Fatalf("cancel member: %d", code)
	}
	cycle()
	for ref, want := range map[string]string{fresh.ID: "NEW", accepted.ID: "ACCEPTED", completing.ID: "COMPLETING"} {
		if got := getJob(t, m, alice, ref).State; got != want {
			t.Fatalf("job %s is %s before cancelling, want %s", ref, got, want)
		}
		if code := m.Do(alice, "DELETE", "/v1/jobs/"+ref, nil, nil); code != http.StatusAccepted {
			t.Fatalf("cancel %s: %d", ref, code)
		}
	}
	if s := get(t, m, alice, member.ID); s.Status != "CANCELLED" {
		t.Fatalf("the cancelled job's member is %s", s.Status)
	}
	cycle()
	for _, ref := range []string{fresh.ID, accepted.ID, completing.ID} {
		j := getJob(t, m, alice, ref)
		last := j.History[len(j.History)-1]
		if j.State != "FAILED" || last.Event != "Fail" || last.From != "FAILING" {
			t.Errorf("job %s: %s, history %+v", ref, j.State, j.History)
		}
	}
}

// Seed 003's Reject at admission, beyond an invalid member: a NEW job
// whose first member a policy refuses (more than the user's max_slots) or
// whose group refuses (DRAINING takes no new sessions) is REJECTED with
// the refusal as its reason. A STOPPED group still admits, so its job is
// not rejected: the member waits for the group to start.
func TestJobRejectedByPolicyOrGroup(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	if code := m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", v1.PolicyRequest{MaxSlots: map[string]string{"cpu": "2"}}, nil); code != http.StatusOK {
		t.Fatalf("PUT policy: %d", code)
	}
	for _, g := range []string{"drained", "stopped"} {
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/"+g, map[string]any{}, nil); code != http.StatusCreated {
			t.Fatalf("create group %s: %d", g, code)
		}
	}
	for g, st := range map[string]string{"drained": "DRAINING", "stopped": "STOPPED"} {
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/"+g, map[string]any{"state": st}, nil); code != http.StatusOK {
			t.Fatalf("%s → %s: %d", g, st, code)
		}
	}
	newJob := func(name string) v1.Job {
		t.Helper()
		var j v1.Job
		if code := m.Do(alice, "POST", "/v1/jobs", map[string]any{"name": name, "min_available": 2}, &j); code != http.StatusCreated {
			t.Fatalf("create job %s: %d", name, code)
		}
		return j
	}
	for _, tc := range []struct {
		name   string
		member map[string]any
		code   int
		field  string
		reason string
	}{
		{"over-policy", map[string]any{"resources": map[string]string{"cpu": "3"}},
			http.StatusBadRequest, "resources.cpu", "user alice's policy"},
		{"group-draining", map[string]any{"resource_group": "drained", "resources": map[string]string{"cpu": "1"}},
			http.StatusConflict, "resource_group", "resource group drained is DRAINING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(tc.name)
			body := map[string]any{"image": "sleep", "job": j.ID}
			for k, v := range tc.member {
				body[k] = v
			}
			var e v1.ErrorResponse
			if code := m.Do(alice, "POST", "/v1/sessions", body, &e); code != tc.code || e.Error.Field != tc.field {
				t.Fatalf("member: %d %+v; want %d on %s", code, e.Error, tc.code, tc.field)
			}
			got := getJob(t, m, alice, j.ID)
			if got.State != "REJECTED" || len(got.History) != 1 || got.History[0].Event != "Reject" ||
				!strings.Contains(got.StateReason, tc.reason) || len(got.Members) != 0 {
				t.Fatalf("after its first member was refused: %+v; want REJECTED naming %q", got, tc.reason)
			}
		})
	}
	j := newJob("in-stopped")
	create(t, m, alice, map[string]any{"image": "sleep", "job": j.ID, "resource_group": "stopped",
		"resources": map[string]string{"cpu": "1"}})
	if got := getJob(t, m, alice, j.ID); got.State != "NEW" || len(got.Members) != 1 {
		t.Fatalf("a member admitted by a STOPPED group: %+v; want the job NEW with it", got)
	}
}

// TestJobNotRejectedByAPendingCap: a first member refused only because its
// owner has max_pending_sessions waiting (429, "wait for one to start") is
// a refusal for now, not of the job: Rejected is final, so the job stays
// NEW and takes the member once there is room.
func TestJobNotRejectedByAPendingCap(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	if code := m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_pending_sessions": 1}, nil); code != http.StatusOK {
		t.Fatalf("PUT policy: %d", code)
	}
	first := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
	var j v1.Job
	if code := m.Do(alice, "POST", "/v1/jobs", map[string]any{"name": "later", "min_available": 1}, &j); code != http.StatusCreated {
		t.Fatalf("create job: %d", code)
	}
	member := map[string]any{"image": "sleep", "job": j.ID, "resources": map[string]string{"cpu": "1"}}
	if code, raw := m.Raw(alice, "POST", "/v1/sessions", member); code != http.StatusTooManyRequests {
		t.Fatalf("member over the pending cap: %d %s, want 429", code, raw)
	}
	if got := getJob(t, m, alice, j.ID); got.State != "NEW" || len(got.History) != 0 {
		t.Fatalf("after a 429: %+v; want the job still NEW", got)
	}
	if code := m.Do(alice, "DELETE", "/v1/sessions/"+first.ID, nil, nil); code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("cancel the pending session: %d", code)
	}
	create(t, m, alice, member)
	if got := getJob(t, m, alice, j.ID); got.State == "REJECTED" || len(got.Members) != 1 {
		t.Fatalf("once there is room: %+v; want the member in a live job", got)
	}
}
