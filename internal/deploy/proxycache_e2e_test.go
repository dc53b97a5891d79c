package deploy_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// The proxy remembers what a token resolved to for api.ProxyCacheTTL, so
// a revoked deployment token may still pass for that long after the
// revocation commits, and never longer: every request sent from then on
// is refused with 401, while the owner's token, also remembered, goes on
// being served.
func TestRevokedTokenIsRefusedWithinTheProxyCacheBound(t *testing.T) {
	e := startDev(t)
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "c", Image: "http-echo",
		Resources: map[string]string{"cpu": "1", "mem": "64m"}, HealthCheck: fastHealth()}, &v1.Deployment{}); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	e.waitServing("c", 1)
	var tok v1.DeploymentToken
	if code := e.call("POST", "/v1/deployments/c/tokens", nil, &tok); code != http.StatusCreated {
		t.Fatalf("create token: %d", code)
	}
	// A token created a moment ago works at once: refusals are not kept.
	if got := e.proxyAs(tok.Token, "c"); got != http.StatusOK {
		t.Fatalf("new token: %d, want 200", got)
	}
	if code := e.call("DELETE", "/v1/deployments/c/tokens/"+tok.ID, nil, &v1.DeploymentToken{}); code != http.StatusOK {
		t.Fatalf("revoke: %d", code)
	}
	revoked := time.Now()
	bound := revoked.Add(api.ProxyCacheTTL)
	refusedAt := time.Time{}
	for time.Since(revoked) < 3*api.ProxyCacheTTL {
		sent := time.Now()
		got := e.proxyAs(tok.Token, "c")
		switch {
		case got == http.StatusUnauthorized:
			if refusedAt.IsZero() {
				refusedAt = sent
			}
		case got != http.StatusOK:
			t.Fatalf("revoked token: %d, want 200 (remembered) or 401", got)
		case !sent.Before(bound):
			t.Fatalf("revoked token served %s after the revocation, past the %s bound", sent.Sub(revoked), api.ProxyCacheTTL)
		case !refusedAt.IsZero():
			t.Fatalf("revoked token served again after a refusal")
		}
		if got := e.proxyAs(e.token, "c"); got != http.StatusOK {
			t.Fatalf("owner's token: %d, want 200", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if refusedAt.IsZero() {
		t.Fatalf("the revoked token was never refused")
	}
	t.Logf("refused %s after the revocation (bound %s)", refusedAt.Sub(revoked), api.ProxyCacheTTL)
}
