package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestTokensRotate: a user replaces their token, an admin replaces
// another user's; the old tokens stop working at once and the new one
// works; a user may not replace another's, and no user is 404.
func TestTokensRotate(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p1")

	var mine v1.NewUser
	if code := m.Do(alice, "POST", "/v1/me/token", nil, &mine); code != http.StatusOK || mine.Name != "alice" || mine.Token == "" {
		t.Fatalf("alice's rotation: %d %+v", code, mine)
	}
	if code := m.Do(alice, "GET", "/v1/me", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("alice's old token after her rotation: %d, want 401", code)
	}
	var me v1.User
	if code := m.Do(mine.Token, "GET", "/v1/me", nil, &me); code != http.StatusOK || me.Name != "alice" {
		t.Errorf("alice's new token: %d %+v", code, me)
	}
	if code := m.Do(mine.Token, "POST", "/v1/users/bob/token", nil, nil); code != http.StatusForbidden {
		t.Errorf("a user replacing another's token: %d, want 403", code)
	}
	var bobs v1.NewUser
	if code := m.Do(m.AdminToken, "POST", "/v1/users/bob/token", nil, &bobs); code != http.StatusOK || bobs.Name != "bob" {
		t.Fatalf("the admin's rotation of bob's token: %d %+v", code, bobs)
	}
	if code := m.Do(bob, "GET", "/v1/me", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("bob's old token after the admin's rotation: %d, want 401", code)
	}
	if code := m.Do(bobs.Token, "GET", "/v1/me", nil, nil); code != http.StatusOK {
		t.Errorf("bob's new token: %d", code)
	}
	if code := m.Do(mine.Token, "GET", "/v1/me", nil, nil); code != http.StatusOK {
		t.Errorf("alice's token after bob's rotation: %d, want it untouched", code)
	}
	if code := m.Do(m.AdminToken, "POST", "/v1/users/nobody/token", nil, nil); code != http.StatusNotFound {
		t.Errorf("no such user: %d, want 404", code)
	}
}

// TestTokenTTL: a token replaced with a ttl says when it expires and
// works until then; once expired it gets 401 saying it expired (not that
// it is unknown), on the API, /metrics and the proxies alike; a bad ttl is
// 400 naming the field and changes nothing.
func TestTokenTTL(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	alice := m.User("alice", "user", "p1")
	for _, bad := range []any{map[string]string{"ttl": "soon"}, map[string]string{"ttl": "-1h"}, map[string]string{"ttl": "0s"},
		map[string]any{"ttl": 5}} {
		code, body := m.Raw(alice, "POST", "/v1/me/token", bad)
		if code != http.StatusBadRequest || !strings.Contains(string(body), "ttl") {
			t.Errorf("ttl %v: %d %s, want 400 naming ttl", bad, code, body)
		}
	}
	if code := m.Do(alice, "GET", "/v1/me", nil, nil); code != http.StatusOK {
		t.Fatalf("alice's token after refused replacements: %d, want it untouched", code)
	}

	var got v1.NewUser
	before := time.Now()
	if code := m.Do(alice, "POST", "/v1/me/token", map[string]string{"ttl": "720h"}, &got); code != http.StatusOK ||
		got.ExpiresAt == nil || got.ExpiresAt.Before(before.Add(719*time.Hour)) || got.ExpiresAt.After(time.Now().Add(720*time.Hour)) {
		t.Fatalf("a token for 720h: %d %+v", code, got)
	}
	if code := m.Do(got.Token, "GET", "/v1/me", nil, nil); code != http.StatusOK {
		t.Fatalf("a token before its expiry: %d", code)
	}
	var forever v1.NewUser
	if code := m.Do(m.AdminToken, "POST", "/v1/users/alice/token", nil, &forever); code != http.StatusOK || forever.ExpiresAt != nil {
		t.Fatalf("a token without a ttl: %d %+v, want one that never expires", code, forever)
	}

	// The token as it stands an hour after it expired.
	past := time.Now().Add(-2 * time.Hour)
	if err := m.Store.ReplaceTokens(context.Background(), got.ID, api.HashToken(got.Token), past, past.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/me", "/v1/sessions/nope/proxy/8080/"} {
		code, body := m.Raw(got.Token, "GET", path, nil)
		if code != http.StatusUnauthorized || !strings.Contains(string(body), "expired") {
			t.Errorf("GET %s with an expired token: %d %s, want 401 saying it expired", path, code, body)
		}
	}
}
