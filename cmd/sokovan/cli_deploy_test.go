package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// sokovan deploy token create|ls|rm: a created token opens the
// deployment's proxy, is listed without its secret, and once revoked
// opens nothing. No controller runs, so the deployment stays PENDING and
// its proxy answers 503: that is how a token that passed looks.
func TestCLIDeployTokens(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p2")
	c.ok(alice, "deploy", "create", "echo", "--image", "sleep", "--cpu", "1", "--mem", "1g")
	proxy := func(token string) int {
		t.Helper()
		code, _ := m.Raw(token, "GET", "/v1/deployments/echo/proxy/", nil)
		return code
	}

	r := c.run(alice, "deploy", "token", "create", "echo")
	if r.code != 0 {
		t.Fatalf("token create: exit %d\n%s", r.code, r.stderr)
	}
	var id, token string
	for _, line := range strings.Split(r.stdout, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			switch k {
			case "id":
				id = strings.TrimSpace(v)
			case "token":
				token = strings.TrimSpace(v)
			}
		}
	}
	if id == "" || !strings.HasPrefix(token, "skvd_") || !strings.Contains(r.stderr, "not shown again") {
		t.Fatalf("token create printed\nstdout: %s\nstderr: %s\nwant its id, a skvd_ token, and that it is shown once", r.stdout, r.stderr)
	}
	if code := proxy(token); code != http.StatusServiceUnavailable {
		t.Errorf("proxy with the new token: %d, want 503 (authorised, no route)", code)
	}
	if code := proxy("skvd_not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("proxy with a made-up token: %d, want 401", code)
	}

	var second v1.DeploymentToken
	if err := json.Unmarshal([]byte(c.ok(alice, "deploy", "token", "create", "echo", "-o", "json")), &second); err != nil ||
		second.ID == "" || !strings.HasPrefix(second.Token, "skvd_") {
		t.Fatalf("token create -o json: %+v (%v)", second, err)
	}
	ls := c.ok(alice, "deploy", "token", "ls", "echo")
	if !strings.Contains(ls, id) || !strings.Contains(ls, second.ID) || strings.Count(ls, "valid") != 2 ||
		strings.Contains(ls, token) || strings.Contains(ls, second.Token) {
		t.Errorf("token ls:\n%s\nwant both ids valid, and no token", ls)
	}

	if out := c.ok(alice, "deploy", "token", "rm", "echo", id); !strings.Contains(out, id+"  revoked") {
		t.Errorf("token rm printed %q", out)
	}
	var list v1.List[v1.DeploymentToken]
	if err := json.Unmarshal([]byte(c.ok(alice, "deploy", "token", "ls", "echo", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	revoked := map[string]bool{}
	for _, tok := range list.Items {
		revoked[tok.ID] = tok.RevokedAt != nil
	}
	if len(revoked) != 2 || !revoked[id] || revoked[second.ID] {
		t.Errorf("token ls -o json after rm: %+v, want %s revoked and %s not", list.Items, id, second.ID)
	}
	// A manager trusts what it read of a token for api.ProxyCacheTTL.
	apitest.Eventually(t, 5*time.Second, "the revoked token to be refused", func() bool {
		return proxy(token) == http.StatusUnauthorized
	})
	if code := proxy(second.Token); code != http.StatusServiceUnavailable {
		t.Errorf("proxy with the token left: %d, want 503", code)
	}
	if r := c.run(alice, "deploy", "token", "rm", "echo", id); r.code == 0 || !strings.Contains(r.stderr, "revoked already") {
		t.Errorf("second rm: exit %d, stderr %q", r.code, r.stderr)
	}

	// Bob may not see nor make alice's deployment's tokens.
	for _, args := range [][]string{{"ls", "echo"}, {"create", "echo"}, {"rm", "echo", second.ID}} {
		if r := c.run(bob, append([]string{"deploy", "token"}, args...)...); r.code == 0 || !strings.Contains(r.stderr, `no deployment "echo"`) {
			t.Errorf("bob token %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
