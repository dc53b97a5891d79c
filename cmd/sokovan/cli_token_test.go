package main

import (
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// TestCLIUserToken: `user token` prints a new token once and the old one
// stops working; an admin replaces another user's with `user token NAME`.
func TestCLIUserToken(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p")
	out := c.ok(alice, "user", "token")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "new token for alice") {
		t.Fatalf("user token printed:\n%s", out)
	}
	fresh := lines[1]
	if r := c.run(alice, "session", "ls"); r.code == 0 {
		t.Errorf("alice's old token still works after user token")
	}
	c.ok(fresh, "session", "ls")
	if r := c.run(fresh, "user", "token", "bob"); r.code == 0 {
		t.Errorf("a user replaced another's token")
	}
	m.User("bob", "user", "p")
	if out := c.ok(m.AdminToken, "user", "token", "bob"); !strings.Contains(out, "new token for bob") {
		t.Errorf("the admin's user token bob printed:\n%s", out)
	}
}

// TestCLIUserTokenTTL: `user token --ttl` prints when the new token
// expires; a ttl that is not a positive duration is refused before any
// call, leaving the old token working.
func TestCLIUserTokenTTL(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p")
	for _, bad := range []string{"0s", "-1h", "soon"} {
		if r := c.run(alice, "user", "token", "--ttl", bad); r.code == 0 {
			t.Errorf("--ttl %s accepted", bad)
		}
	}
	c.ok(alice, "session", "ls")
	out := c.ok(alice, "user", "token", "--ttl", "720h")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "it expires at") {
		t.Fatalf("user token --ttl printed:\n%s", out)
	}
	c.ok(lines[1], "session", "ls")
	if out := c.ok(lines[1], "user", "token"); !strings.Contains(out, "does not expire") {
		t.Errorf("user token without --ttl printed:\n%s", out)
	}
}
