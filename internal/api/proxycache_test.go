package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// countReads counts the proxy's per-request reads at the store's edge; it
// changes nothing they return.
type countReads struct {
	api.Store
	users, deployments *atomic.Int64
}

func (c countReads) UserByTokenHash(ctx context.Context, hash []byte) (store.User, error) {
	c.users.Add(1)
	return c.Store.UserByTokenHash(ctx, hash)
}

func (c countReads) GetDeployment(ctx context.Context, id domain.DeploymentID) (domain.Deployment, error) {
	c.deployments.Add(1)
	return c.Store.GetDeployment(ctx, id)
}

// Requests through a deployment's proxy within api.ProxyCacheTTL of each
// other read the caller and the deployment once; after the bound they
// are read again.
func TestProxyReadsTokenAndDeploymentOncePerBound(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := m.Store.CreateDeployment(context.Background(), domain.Deployment{ID: "d1", Name: "llm",
		Owner: domain.Owner{User: "alice", Project: "p1", Domain: "default"}, Status: domain.DeploymentPending,
		StatusChangedAt: now, CreatedAt: now, Replicas: 1,
		Spec:     domain.DeploymentSpec{Image: "http-echo", Resources: map[string]string{"cpu": "1"}},
		Health:   domain.HealthCheck{Path: "/health", Interval: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3},
		Revision: 1, MaxSurge: 1}); err != nil {
		t.Fatal(err)
	}
	var users, deps atomic.Int64
	api.WrapStore(m.Server, func(s api.Store) api.Store { return countReads{Store: s, users: &users, deployments: &deps} })
	proxy := func() {
		t.Helper()
		// No route serves yet: 503 says the request passed auth and
		// found its deployment, and the body says why no route took it.
		code, raw := m.Raw(alice, "GET", "/v1/deployments/d1/proxy/x", nil)
		if code != http.StatusServiceUnavailable {
			t.Fatalf("proxy: %d %s, want 503", code, raw)
		}
		e := errorOf(t, raw)
		if e.Code != "unavailable" || !strings.Contains(e.Message, "llm (d1, PENDING)") || !strings.Contains(e.Message, "no HEALTHY route") {
			t.Fatalf("proxy with no HEALTHY route: %+v, want code unavailable naming llm (d1, PENDING) and no HEALTHY route", e)
		}
	}
	start := time.Now()
	for range 5 {
		proxy()
	}
	if time.Since(start) < api.ProxyCacheTTL && (users.Load() != 1 || deps.Load() != 1) {
		t.Fatalf("5 requests read the user %d times and the deployment %d times, want once each", users.Load(), deps.Load())
	}
	time.Sleep(api.ProxyCacheTTL)
	u, d := users.Load(), deps.Load()
	proxy()
	if users.Load() != u+1 || deps.Load() != d+1 {
		t.Errorf("after the bound: %d user and %d deployment reads, want one more each", users.Load()-u, deps.Load()-d)
	}
}
