package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// `agent token create` prints a join token once that lets --uses agents
// join; bad flags exit non-zero naming the flag, and a user may not.
func TestCLIAgentTokenCreate(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1, Manual: true})
	c := newCLI(t, m)
	out := c.ok(m.AdminToken, "agent", "token", "create", "--ttl", "1h", "--uses", "1")
	tok := regexp.MustCompile(`token:\s+(\S+)`).FindStringSubmatch(out)
	if tok == nil || !strings.HasPrefix(tok[1], pki.JoinTokenPrefix) {
		t.Fatalf("create printed %q; want a join token", out)
	}
	ctx := context.Background()
	c1 := store.AgentCertificate{Serial: "01", Agent: "n1", NotAfter: time.Now().Add(time.Hour)}
	if err := m.Store.JoinAgent(ctx, pki.HashJoinToken(tok[1]), c1, time.Now()); err != nil {
		t.Fatalf("joining with the printed token: %v", err)
	}
	c2 := store.AgentCertificate{Serial: "02", Agent: "n2", NotAfter: time.Now().Add(time.Hour)}
	if err := m.Store.JoinAgent(ctx, pki.HashJoinToken(tok[1]), c2, time.Now()); err == nil {
		t.Fatal("a one-use token let in a second agent")
	}
	for _, args := range [][]string{{"--uses", "-1"}, {"--ttl", "soon"}} {
		if r := c.run(m.AdminToken, append([]string{"agent", "token", "create"}, args...)...); r.code == 0 ||
			!strings.Contains(r.stderr, strings.TrimPrefix(args[0], "--")) {
			t.Errorf("create %v: exit %d, stderr %q; want non-zero naming the flag", args, r.code, r.stderr)
		}
	}
	alice := m.User("alice", "user", "p1")
	if r := c.run(alice, "agent", "token", "create"); r.code == 0 {
		t.Error("a user created a join token")
	}
}
