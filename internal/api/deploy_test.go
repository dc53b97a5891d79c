package api_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// putDeployment writes a PENDING deployment straight to the store, so a
// test can choose its id; with no controller running it stays so.
func putDeployment(t *testing.T, m *apitest.Manager, id, name, user, project string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := m.Store.CreateDeployment(context.Background(), domain.Deployment{ID: domain.DeploymentID(id), Name: name,
		Owner: domain.Owner{User: user, Project: project, Domain: "default"}, Status: domain.DeploymentPending,
		StatusChangedAt: now, CreatedAt: now, Replicas: 1,
		Spec:     domain.DeploymentSpec{Image: "sleep", Resources: map[string]string{"cpu": "1"}},
		Health:   domain.DefaultHealthCheck(),
		Revision: 1, MaxSurge: 1}); err != nil {
		t.Fatal(err)
	}
}

// createDeployment creates a deployment through the API.
func createDeployment(t *testing.T, m *apitest.Manager, token, name string) v1.Deployment {
	t.Helper()
	var d v1.Deployment
	if code := m.Do(token, "POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: name, Image: "sleep",
		Resources: map[string]string{"cpu": "1", "mem": "1g"}}, &d); code != http.StatusCreated {
		t.Fatalf("create deployment %s: status %d", name, code)
	}
	return d
}

// TestDeploymentReferences: every deployment route takes the id, a unique
// id prefix or the name, within what the caller may see, as session
// routes do.
func TestDeploymentReferences(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p2")
		llm := createDeployment(t, m, alice, "llm")

		for _, ref := range []string{llm.ID, "llm", llm.ID[:8], llm.ID[:6]} {
			for _, suffix := range []string{"/history", "/tokens"} {
				if code, raw := m.Raw(alice, "GET", "/v1/deployments/"+ref+suffix, nil); code != http.StatusOK {
					t.Errorf("alice GET %s%s: %d %s", ref, suffix, code, raw)
				}
			}
			var got v1.Deployment
			if code := m.Do(alice, "GET", "/v1/deployments/"+ref, nil, &got); code != http.StatusOK || got.ID != llm.ID {
				t.Errorf("alice GET %s: %d, deployment %q, want %s", ref, code, got.ID, llm.ID)
			}
		}
		if code, _ := m.Raw(alice, "GET", "/v1/deployments/"+llm.ID[:5], nil); code != http.StatusNotFound {
			t.Errorf("a 5-character prefix: %d, want 404", code)
		}
		if code := m.Do(m.AdminToken, "GET", "/v1/deployments/"+llm.ID[:8], nil, nil); code != http.StatusOK {
			t.Errorf("admin by prefix: %d, want 200", code)
		}

		// Another user's deployment is not matched, by prefix nor name,
		// and the answer is a missing deployment's.
		_, missing := m.Raw(bob, "GET", "/v1/deployments/ffffffff", nil)
		for _, ref := range []string{"llm", llm.ID[:8], llm.ID} {
			code, raw := m.Raw(bob, "GET", "/v1/deployments/"+ref, nil)
			if code != http.StatusNotFound {
				t.Errorf("bob GET alice's %s: %d, want 404", ref, code)
			}
			if got, want := errorOf(t, raw).Message, strings.ReplaceAll(errorOf(t, missing).Message, "ffffffff", ref); got != want {
				t.Errorf("bob GET alice's %s: %q, want a missing deployment's %q", ref, got, want)
			}
		}

		// Bob's own llm is his alone; the admin, who sees both, is told
		// which there are.
		bobs := createDeployment(t, m, bob, "llm")
		var got v1.Deployment
		if code := m.Do(bob, "GET", "/v1/deployments/llm", nil, &got); code != http.StatusOK || got.ID != bobs.ID {
			t.Errorf("bob GET llm: %d %q, want his %s", code, got.ID, bobs.ID)
		}
		code, raw := m.Raw(m.AdminToken, "GET", "/v1/deployments/llm", nil)
		if msg := errorOf(t, raw).Message; code != http.StatusConflict || !strings.Contains(msg, llm.ID) || !strings.Contains(msg, bobs.ID) {
			t.Errorf("admin GET llm, two owners: %d %q, want 409 listing both", code, msg)
		}

		// A prefix that starts several of alice's ids is refused with
		// the candidates; one more character picks one.
		putDeployment(t, m, "abcdef01-0000-4000-8000-000000000000", "one", "alice", "p1")
		putDeployment(t, m, "abcdef02-0000-4000-8000-000000000000", "two", "alice", "p1")
		code, raw = m.Raw(alice, "GET", "/v1/deployments/abcdef0", nil)
		e := errorOf(t, raw)
		if code != http.StatusConflict || e.Code != "conflict" || e.Field != "id" ||
			!strings.Contains(e.Message, "abcdef01-0000-4000-8000-000000000000 (one, PENDING)") ||
			!strings.Contains(e.Message, "abcdef02-0000-4000-8000-000000000000 (two, PENDING)") {
			t.Errorf("ambiguous prefix: %d %+v, want 409 on id listing both", code, e)
		}
		if code := m.Do(alice, "GET", "/v1/deployments/abcdef02", nil, &got); code != http.StatusOK || got.Name != "two" {
			t.Errorf("longer prefix: %d %q, want two", code, got.Name)
		}
		if code, _ := m.Raw(bob, "GET", "/v1/deployments/abcdef0", nil); code != http.StatusNotFound {
			t.Errorf("bob GET alice's ambiguous prefix: %d, want 404", code)
		}
	})
}

// TestProxyMetricsByCode: the proxy's requests and their latency are
// both counted by deployment and status code, so a dashboard can tell
// how long the failures took apart from the answers.
func TestProxyMetricsByCode(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	putDeployment(t, m, "d1", "llm", "alice", "p1")
	for range 2 {
		if code, raw := m.Raw(alice, "GET", "/v1/deployments/d1/proxy/x", nil); code != http.StatusServiceUnavailable {
			t.Fatalf("proxy with no route: %d %s, want 503", code, raw)
		}
	}
	_, body := m.Raw(m.AdminToken, "GET", "/metrics", nil)
	for _, want := range []string{
		`sokovan_deployment_proxy_requests_total{code="503",deployment="d1"} 2`,
		`sokovan_deployment_proxy_duration_seconds_count{code="503",deployment="d1"} 2`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestOpenAPIDeploymentPatchNamesEveryField: the PATCH operation's text
// names every field its body takes, so a field added to the request
// cannot go undocumented (its summary once spoke of replicas alone).
func TestOpenAPIDeploymentPatchNamesEveryField(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	var doc struct {
		Paths map[string]map[string]struct {
			Summary     string `json:"summary"`
			Description string `json:"description"`
		} `json:"paths"`
	}
	if code := m.Do("", "GET", "/v1/openapi.json", nil, &doc); code != http.StatusOK {
		t.Fatalf("openapi.json: %d", code)
	}
	op, ok := doc.Paths["/v1/deployments/{id}"]["patch"]
	if !ok {
		t.Fatal("PATCH /v1/deployments/{id} is not documented")
	}
	text := op.Summary + " " + op.Description
	if !strings.Contains(op.Summary, "roll") {
		t.Errorf("PATCH summary %q does not say it rolls out a new spec", op.Summary)
	}
	for f := range reflect.TypeFor[v1.UpdateDeploymentRequest]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !strings.Contains(text, name) {
			t.Errorf("PATCH /v1/deployments/{id} does not mention %s:\n%s", name, text)
		}
	}
}
