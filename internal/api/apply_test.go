package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/store"
)

func applyBody(objs ...map[string]any) map[string]any {
	list := make([]any, len(objs))
	for i, o := range objs {
		list[i] = o
	}
	return map[string]any{"objects": list}
}

func sessionObj(name string, spec map[string]any) map[string]any {
	return map[string]any{"kind": "Session", "name": name, "spec": spec}
}

// everything counts what apply may write: sessions, jobs and deployments.
func everything(t *testing.T, m *apitest.Manager) [3]int {
	t.Helper()
	ctx := context.Background()
	ss, err := m.Store.ListSessions(ctx, store.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := m.Store.ListJobs(ctx, store.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := m.Store.ListDeployments(ctx, store.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return [3]int{len(ss), len(js), len(ds)}
}

// Applying the same objects twice creates them once: the second apply
// says unchanged for each and writes nothing.
func TestApplyTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	engines(t, testApplyTwice)
}

func testApplyTwice(t *testing.T, engine string) {
	m := apitest.New(t, apitest.Options{Manual: true, Engine: engine})
	alice := m.User("alice", "user", "p1")
	body := applyBody(
		sessionObj("train", map[string]any{"image": "sleep", "resources": map[string]any{"cpu": "1", "mem": "1g"}, "env": map[string]any{"A": "1"}}),
		map[string]any{"kind": "Job", "name": "gang", "spec": map[string]any{"min_available": 2},
			"members": []any{
				map[string]any{"name": "w0", "spec": map[string]any{"image": "sleep"}},
				map[string]any{"name": "w1", "spec": map[string]any{"image": "sleep", "depends_on": []any{"train"}}},
			}},
		map[string]any{"kind": "Deployment", "name": "web", "spec": map[string]any{"image": "http-echo"}},
	)
	var first v1.Apply
	if code := m.Do(alice, "POST", "/v1/apply", body, &first); code != http.StatusOK {
		t.Fatalf("first apply: %d", code)
	}
	var actions []string
	for _, it := range first.Items {
		actions = append(actions, it.Kind+"/"+it.Name+"="+it.Action)
	}
	if got, want := strings.Join(actions, " "), "Session/train=created Job/gang=created Session/w0=created Session/w1=created Deployment/web=created"; got != want {
		t.Fatalf("first apply: got %s, want %s", got, want)
	}
	var w1 v1.Session
	m.Do(alice, "GET", "/v1/sessions/w1", nil, &w1)
	if len(w1.DependsOn) != 1 || w1.DependsOn[0] != first.Items[0].ID || w1.Job != first.Items[1].ID {
		t.Fatalf("w1 depends on %v in job %s; want [%s] in %s", w1.DependsOn, w1.Job, first.Items[0].ID, first.Items[1].ID)
	}
	before := everything(t, m)
	changes, _ := m.Store.LastChange(context.Background())
	var second v1.Apply
	if code := m.Do(alice, "POST", "/v1/apply", body, &second); code != http.StatusOK {
		t.Fatalf("second apply: %d", code)
	}
	for i, it := range second.Items {
		if it.Action != "unchanged" || it.ID != first.Items[i].ID {
			t.Errorf("second apply of %s %s: %s %s, want unchanged %s", it.Kind, it.Name, it.Action, it.ID, first.Items[i].ID)
		}
	}
	after := everything(t, m)
	changes2, _ := m.Store.LastChange(context.Background())
	if after != before || changes2 != changes {
		t.Errorf("second apply wrote: %v → %v, change feed %d → %d", before, after, changes, changes2)
	}
}

// A refused object, anywhere in the request, writes nothing, and the
// error names the object and the field.
func TestApplyRefusalNamesFieldAndWritesNothing(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"bad quantity", applyBody(sessionObj("a", map[string]any{"image": "sleep"}),
			sessionObj("b", map[string]any{"image": "sleep", "resources": map[string]any{"mem": "lots"}})),
			"objects[1].spec.resources.mem"},
		{"unknown field", applyBody(sessionObj("a", map[string]any{"image": "sleep", "imge": "x"})), "objects[0].spec.imge"},
		{"wrong kind", applyBody(map[string]any{"kind": "Pod", "name": "x", "spec": map[string]any{}}), "objects[0].kind"},
		{"no name", applyBody(map[string]any{"kind": "Session", "spec": map[string]any{"image": "sleep"}}), "objects[0].name"},
		{"spec name differs", applyBody(sessionObj("a", map[string]any{"image": "sleep", "name": "b"})), "objects[0].spec.name"},
		{"member field", applyBody(map[string]any{"kind": "Job", "name": "j", "spec": map[string]any{},
			"members": []any{map[string]any{"name": "m", "spec": map[string]any{"image": "sleep", "cluster_size": 0}}}}),
			"objects[0].members[0].spec.cluster_size"},
		{"deployment replicas", applyBody(sessionObj("a", map[string]any{"image": "sleep"}),
			map[string]any{"kind": "Deployment", "name": "d", "spec": map[string]any{"image": "http-echo", "replicas": 99}}),
			"objects[1].spec.replicas"},
		{"duplicate", applyBody(sessionObj("a", map[string]any{"image": "sleep"}), sessionObj("a", map[string]any{"image": "sleep"})),
			"objects[1].name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := everything(t, m)
			var e v1.ErrorResponse
			if code := m.Do(alice, "POST", "/v1/apply", c.body, &e); code/100 != 4 || e.Error.Field != c.field {
				t.Errorf("got %d field %q (%s), want 4xx at %s", code, e.Error.Field, e.Error.Message, c.field)
			}
			if after := everything(t, m); after != before {
				t.Errorf("refused apply wrote: %v → %v", before, after)
			}
		})
	}
}

// A live session whose spec the file changes is refused at the changed
// field, saying what to do; a deployment's change is a rollout.
func TestApplyChangedSpec(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	m.Do(alice, "POST", "/v1/apply", applyBody(sessionObj("a", map[string]any{"image": "sleep"}),
		map[string]any{"kind": "Deployment", "name": "web", "spec": map[string]any{"image": "http-echo"}}), nil)
	var e v1.ErrorResponse
	code := m.Do(alice, "POST", "/v1/apply", applyBody(sessionObj("a", map[string]any{"image": "sleep", "priority": 20})), &e)
	if code != http.StatusConflict || e.Error.Field != "objects[0].spec.priority" || !strings.Contains(e.Error.Message, "session rm") {
		t.Errorf("changed session: %d %q %q", code, e.Error.Field, e.Error.Message)
	}
	var out v1.Apply
	code = m.Do(alice, "POST", "/v1/apply", applyBody(
		map[string]any{"kind": "Deployment", "name": "web", "spec": map[string]any{"image": "http-echo", "env": map[string]any{"V": "2"}, "replicas": 2}}), &out)
	if code != http.StatusOK || out.Items[0].Action != "updated" || strings.Join(out.Items[0].Changed, ",") != "env,replicas" {
		t.Fatalf("changed deployment: %d %+v", code, out.Items)
	}
	var d v1.Deployment
	m.Do(alice, "GET", "/v1/deployments/web", nil, &d)
	if d.Revision != 2 || d.Replicas != 2 || d.Env["V"] != "2" {
		t.Errorf("deployment after apply: revision %d replicas %d env %v; want a rollout to revision 2 of 2 replicas", d.Revision, d.Replicas, d.Env)
	}
	code = m.Do(alice, "POST", "/v1/apply", applyBody(
		map[string]any{"kind": "Deployment", "name": "web", "spec": map[string]any{"image": "http-echo", "resource_group": "nope"}}), &e)
	if code/100 != 4 || e.Error.Field != "objects[0].spec.resource_group" {
		t.Errorf("moved deployment: %d %q %q", code, e.Error.Field, e.Error.Message)
	}
	// A cancelled job is still live while its members end, and takes no
	// new ones: applying its file again, members ended, is refused there.
	job := applyBody(map[string]any{"kind": "Job", "name": "j", "spec": map[string]any{},
		"members": []any{map[string]any{"name": "m", "spec": map[string]any{"image": "sleep"}}}})
	if code := m.Do(alice, "POST", "/v1/apply", job, nil); code != http.StatusOK {
		t.Fatalf("job: %d", code)
	}
	if code := m.Do(alice, "DELETE", "/v1/jobs/j", nil, nil); code != http.StatusAccepted {
		t.Fatalf("cancel job: %d", code)
	}
	code = m.Do(alice, "POST", "/v1/apply", job, &e)
	if code != http.StatusConflict || e.Error.Field != "objects[0].members[0]" || !strings.Contains(e.Error.Message, "no new members") {
		t.Errorf("member of a cancelled job: %d %q %q", code, e.Error.Field, e.Error.Message)
	}
}

// A dry run writes nothing and says, for each new session, where the
// scheduler would have it wait and when it is estimated to start.
func TestApplyDryRun(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true, Agents: 1, Estimate: true})
	alice := m.User("alice", "user", "p1")
	body := applyBody(
		sessionObj("fits", map[string]any{"image": "sleep", "resources": map[string]any{"cpu": "6", "mem": "1g"}, "time_limit": "1h"}),
		sessionObj("waits", map[string]any{"image": "sleep", "resources": map[string]any{"cpu": "6", "mem": "1g"}}),
		map[string]any{"kind": "Deployment", "name": "web", "spec": map[string]any{"image": "http-echo"}},
	)
	before := everything(t, m)
	changes, _ := m.Store.LastChange(context.Background())
	var out v1.Apply
	if code := m.Do(alice, "POST", "/v1/apply?dry_run=true", body, &out); code != http.StatusOK {
		t.Fatalf("dry run: %d", code)
	}
	if after := everything(t, m); after != before {
		t.Errorf("dry run wrote: %v → %v", before, after)
	}
	if c, _ := m.Store.LastChange(context.Background()); c != changes {
		t.Errorf("dry run moved the change feed: %d → %d", changes, c)
	}
	if !out.DryRun || len(out.Items) != 3 {
		t.Fatalf("dry run answered %+v", out)
	}
	fits, waits := out.Items[0], out.Items[1]
	if fits.Action != "created" || !strings.HasPrefix(fits.Wait, "starts now") || fits.EstimatedStart == nil {
		t.Errorf("fits: %+v", fits)
	}
	if waits.Action != "created" || !strings.HasPrefix(waits.Wait, "waits") || len(waits.Blockers) == 0 ||
		waits.Blockers[0].Kind != "capacity" {
		t.Errorf("waits: %+v", waits)
	}
	// It waits for fits, which runs to its time limit of an hour.
	if waits.EstimatedStart == nil || fits.EstimatedStart == nil || waits.EstimatedStart.Sub(*fits.EstimatedStart).Minutes() < 59 {
		t.Errorf("estimates: fits %v, waits %v; want waits an hour after fits", fits.EstimatedStart, waits.EstimatedStart)
	}
	var e v1.ErrorResponse
	if code := m.Do(alice, "POST", "/v1/apply?dry_run=true", applyBody(sessionObj("x", map[string]any{"image": "sleep",
		"resources": map[string]any{"cpu": "100"}})), &e); code != http.StatusBadRequest || e.Error.Field != "objects[0].spec.resources.cpu" {
		t.Errorf("dry run of a session no agent holds: %d %q %q", code, e.Error.Field, e.Error.Message)
	}
}

// A write refused after others were made (here the owner's pending cap,
// which only the write counts) names its object and says what stands;
// applying again once there is room makes only what is missing.
func TestApplyRefusedMidway(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	if code := m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_pending_sessions": 1}, nil); code != http.StatusOK {
		t.Fatalf("policy: %d", code)
	}
	body := applyBody(sessionObj("a", map[string]any{"image": "sleep"}), sessionObj("b", map[string]any{"image": "sleep"}))
	var e v1.ErrorResponse
	code := m.Do(alice, "POST", "/v1/apply", body, &e)
	if code != http.StatusTooManyRequests || e.Error.Field != "objects[1].spec" || !strings.Contains(e.Error.Message, "the 1 writes before it were made") {
		t.Fatalf("second session over the cap: %d %q %q", code, e.Error.Field, e.Error.Message)
	}
	m.Do(m.AdminToken, "PUT", "/v1/policies/user/alice", map[string]any{"max_pending_sessions": 2}, nil)
	var out v1.Apply
	if code := m.Do(alice, "POST", "/v1/apply", body, &out); code != http.StatusOK || out.Items[0].Action != "unchanged" || out.Items[1].Action != "created" {
		t.Errorf("apply again: %d %+v", code, out.Items)
	}
}
