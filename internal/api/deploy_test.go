package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
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
	_, body := m.Raw("", "GET", "/metrics", nil)
	for _, want := range []string{
		`sokovan_deployment_proxy_requests_total{code="503",deployment="d1"} 2`,
		`sokovan_deployment_proxy_duration_seconds_count{code="503",deployment="d1"} 2`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
