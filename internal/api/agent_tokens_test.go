package api_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// POST /v1/agent-tokens: an admin's join token is shown once, stored by
// its hash, lets in as many agents as it has uses until it expires; users
// may not create one, and a bad ttl or uses is refused naming the field.
func TestAgentTokens(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1, Manual: true})
	alice := m.User("alice", "user", "p1")
	ctx := context.Background()
	cert := func(serial, agent string) store.AgentCertificate {
		return store.AgentCertificate{Serial: serial, Agent: domain.AgentID(agent), NotAfter: time.Now().Add(time.Hour)}
	}

	var tok v1.AgentToken
	if code := m.Do(m.AdminToken, "POST", "/v1/agent-tokens", map[string]any{"ttl": "1h", "uses": 2}, &tok); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	if !strings.HasPrefix(tok.Token, pki.JoinTokenPrefix) || tok.Uses != 2 || tok.ExpiresAt.Sub(tok.CreatedAt) != time.Hour {
		t.Fatalf("created %+v; want a %s token for 2 uses over 1h", tok, pki.JoinTokenPrefix)
	}
	hash := pki.HashJoinToken(tok.Token)
	for i, agent := range []string{"a1", "a2"} {
		if err := m.Store.JoinAgent(ctx, hash, cert(agent, agent), time.Now()); err != nil {
			t.Fatalf("join %d with the token: %v", i+1, err)
		}
	}
	if err := m.Store.JoinAgent(ctx, hash, cert("a3", "a3"), time.Now()); !errors.Is(err, store.ErrJoinTokenSpent) {
		t.Fatalf("third join with a 2-use token: %v, want it spent", err)
	}

	var e v1.ErrorResponse
	if code := m.Do(alice, "POST", "/v1/agent-tokens", map[string]any{}, &e); code != http.StatusForbidden {
		t.Errorf("a user creating a join token: %d, want 403", code)
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"ttl": "soon"}, "ttl"},
		{map[string]any{"ttl": "0s"}, "ttl"},
		{map[string]any{"ttl": "9000h"}, "ttl"},
		{map[string]any{"uses": -1}, "uses"},
	} {
		e = v1.ErrorResponse{}
		if code := m.Do(m.AdminToken, "POST", "/v1/agent-tokens", c.body, &e); code != http.StatusBadRequest || e.Error.Field != c.field {
			t.Errorf("%v: %d field %q, want 400 naming %s", c.body, code, e.Error.Field, c.field)
		}
	}
}

// Removing an agent revokes its certificates: whoever holds its key can no
// longer speak for it, and a new agent of its id may join.
func TestRetireRevokesCertificates(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1, Manual: true})
	ctx := context.Background()
	now := time.Now()
	if err := m.Store.CreateJoinToken(ctx, store.JoinToken{ID: "j", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		[]byte("h")); err != nil {
		t.Fatal(err)
	}
	c := store.AgentCertificate{Serial: "0a0b", Agent: "agent-0", NotAfter: now.Add(time.Hour)}
	if err := m.Store.JoinAgent(ctx, []byte("h"), c, now); err != nil {
		t.Fatal(err)
	}
	if err := m.Store.SetAgentStatus(ctx, "agent-0", domain.AgentLost); err != nil {
		t.Fatal(err)
	}
	if code := m.Do(m.AdminToken, "DELETE", "/v1/agents/agent-0", nil, nil); code != http.StatusOK {
		t.Fatalf("retire: %d", code)
	}
	revoked, err := m.Store.RevokedCertificates(ctx, time.Now())
	if err != nil || !slices.Equal(revoked, []string{"0a0b"}) {
		t.Fatalf("revoked after agent rm: %v %v, want 0a0b", revoked, err)
	}
	c.Serial = "0c0d"
	if err := m.Store.JoinAgent(ctx, []byte("h"), c, time.Now()); err != nil {
		t.Fatalf("a new agent-0 joining after the removal: %v", err)
	}
}
