package api_test

import (
	"net/http"
	"testing"

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
