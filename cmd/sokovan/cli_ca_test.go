package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// `ca rotate` starts a rotation (a second is refused), `ca show` names the
// agents still on the old CA, `ca rotate --finish` is refused naming them
// and then drops the old CA; --ca-out holds both CAs during the rotation
// and the new one after it; join tokens carry both meanwhile.
func TestCLICARotate(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1, Manual: true, ClusterCA: true})
	c := newCLI(t, m)
	ctx := context.Background()
	// n1 joined under the first CA and is not renewing.
	tok := pki.NewJoinToken()
	if err := m.Store.CreateJoinToken(ctx, store.JoinToken{ID: "t", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)},
		pki.HashJoinToken(tok)); err != nil {
		t.Fatal(err)
	}
	if err := m.Store.JoinAgent(ctx, pki.HashJoinToken(tok), store.AgentCertificate{Serial: "01", Agent: "n1",
		NotAfter: time.Now().Add(time.Hour)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	first := c.ok(m.AdminToken, "ca", "show")
	if strings.Contains(first, "rotating") {
		t.Fatalf("show before any rotation: %q", first)
	}
	out := filepath.Join(t.TempDir(), "ca.pem")
	rotating := c.ok(m.AdminToken, "ca", "rotate", "--ca-out", out)
	if !strings.Contains(rotating, "rotating:") || !strings.Contains(rotating, "n1") {
		t.Fatalf("rotate printed %q; want the rotation and n1 stale", rotating)
	}
	if b, err := os.ReadFile(out); err != nil || strings.Count(string(b), "BEGIN CERTIFICATE") != 2 {
		t.Fatalf("--ca-out during the rotation holds %q (%v); want both CAs", b, err)
	}
	joined := c.ok(m.AdminToken, "agent", "token", "create", "--ca-out", out)
	if b, err := os.ReadFile(out); err != nil || strings.Count(string(b), "BEGIN CERTIFICATE") != 2 || joined == "" {
		t.Fatalf("a join token's CA during the rotation: %q (%v); want both CAs", b, err)
	}
	if r := c.run(m.AdminToken, "ca", "rotate"); r.code == 0 || !strings.Contains(r.stderr, "runs already") {
		t.Errorf("a second rotate: exit %d, stderr %q; want a refusal", r.code, r.stderr)
	}
	if r := c.run(m.AdminToken, "ca", "rotate", "--finish"); r.code == 0 || !strings.Contains(r.stderr, "n1") {
		t.Errorf("finish with n1 on the old CA: exit %d, stderr %q; want a refusal naming n1", r.code, r.stderr)
	}
	if _, err := m.Store.RevokeAgentCertificates(ctx, "n1", time.Now()); err != nil {
		t.Fatal(err)
	}
	done := c.ok(m.AdminToken, "ca", "rotate", "--finish", "--ca-out", out)
	if strings.Contains(done, "rotating") || strings.Contains(done, strings.Fields(first)[1]) {
		t.Fatalf("finish printed %q; want the new CA alone", done)
	}
	if b, err := os.ReadFile(out); err != nil || strings.Count(string(b), "BEGIN CERTIFICATE") != 1 {
		t.Fatalf("--ca-out after the rotation holds %q (%v); want the new CA alone", b, err)
	}
	if r := c.run(m.AdminToken, "ca", "rotate", "--finish"); r.code == 0 || !strings.Contains(r.stderr, "no CA rotation") {
		t.Errorf("finish again: exit %d, stderr %q; want a refusal", r.code, r.stderr)
	}
	if r := c.run(m.User("alice", "user", "p1"), "ca", "rotate"); r.code == 0 {
		t.Error("a user rotated the cluster CA")
	}
	plain := apitest.New(t, apitest.Options{Agents: 1, Manual: true})
	if r := newCLI(t, plain).run(plain.AdminToken, "ca", "rotate"); r.code == 0 || !strings.Contains(r.stderr, "no identities") {
		t.Errorf("rotate without agent identities: exit %d, stderr %q; want a refusal", r.code, r.stderr)
	}
}
