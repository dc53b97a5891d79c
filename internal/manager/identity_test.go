package manager_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/manager"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TestAgentIdentityAcrossManagers: two managers on one store share the
// cluster CA the first made; an agent joins through one with a join token,
// reaches both with its certificate, and a manager calls its RPC over
// mutual TLS, which refuses a caller holding only the agent token.
func TestAgentIdentityAcrossManagers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := filepath.Join(t.TempDir(), "s.db")
	var ms []*manager.Manager
	for range 2 {
		m, err := manager.Open(ctx, manager.Config{DB: db, Listen: "127.0.0.1:0", AgentToken: "tok", AgentIdentity: true})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	if string(ms[0].ClusterCA) != string(ms[1].ClusterCA) || len(ms[0].ClusterCA) == 0 {
		t.Fatal("the two managers sign with different cluster CAs")
	}
	for _, m := range ms {
		if !strings.HasPrefix(m.URL(), "https://") {
			t.Fatalf("manager URL %s, want https", m.URL())
		}
	}
	joinToken := pki.NewJoinToken()
	now := time.Now()
	if err := ms[0].Store.CreateJoinToken(ctx, store.JoinToken{ID: "j", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Uses: 1},
		pki.HashJoinToken(joinToken)); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.CACert(ms[0].ClusterCA)
	if err != nil {
		t.Fatal(err)
	}
	managers := ms[1].URL() + "," + ms[0].URL()
	ident, err := agent.JoinCluster(ctx, ms[0].URL(), ca.Pool(), "a1", joinToken, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "a1", ResourceGroup: "default", Manager: managers, Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "4", "mem": "8g"}, HeartbeatInterval: 100 * time.Millisecond, Identity: ident})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx, rt)
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := ms[0].Store.GetAgent(ctx, "a1")
		if err == nil && got.Status == domain.AgentAlive && got.Address == "https://"+a.Addr() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent a1 never registered over TLS: %+v %v", got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, m := range ms {
		if _, err := m.Agents.Kernels(ctx, "a1"); err != nil {
			t.Errorf("manager %d calling a1 over mutual TLS: %v", i, err)
		}
	}
	// A caller without a manager certificate gets no TLS session.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+a.Addr()+"/rpc/kernels", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer tok")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "a1"}}}
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a call with the agent token and no certificate reached the agent: %d", resp.StatusCode)
	}
}

// TestTLSCertWithAgentIdentity: a manager serves users the operator's
// certificate (--tls-cert) and agents, on the same port, its cluster-CA
// certificate: an agent joins, registers and is called over mutual TLS.
// The agent dials the manager by an IP address its cluster certificate
// is checked by role for, not by name.
func TestTLSCertWithAgentIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	site := newTestCA(t)
	site.issue(100, certFile, keyFile)
	ctx, cancel := context.WithCancel(context.Background())
	m, err := manager.Open(ctx, manager.Config{DB: filepath.Join(dir, "s.db"), Listen: "127.0.0.1:0", AgentToken: "tok",
		AgentIdentity: true, TLSCert: certFile, TLSKey: keyFile})
	if err != nil {
		t.Fatalf("--tls-cert with --agent-identity: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if got := servedSerial(t, site.client(), m.URL()); got != 100 {
		t.Fatalf("users are served serial %d, want 100 (the one in --tls-cert)", got)
	}

	joinToken := pki.NewJoinToken()
	now := time.Now()
	if err := m.Store.CreateJoinToken(ctx, store.JoinToken{ID: "j", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Uses: 1},
		pki.HashJoinToken(joinToken)); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.CACert(m.ClusterCA)
	if err != nil {
		t.Fatal(err)
	}
	ident, err := agent.JoinCluster(ctx, m.URL(), ca.Pool(), "both", joinToken, t.TempDir())
	if err != nil {
		t.Fatalf("join through a manager serving --tls-cert: %v", err)
	}
	a, err := agent.New(agent.Config{ID: "both", ResourceGroup: "default", Manager: m.URL(), Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "1", "mem": "1g"}, HeartbeatInterval: 50 * time.Millisecond, Identity: ident})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx, rt)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := m.Store.GetAgent(ctx, "both")
		if err == nil && got.Status == domain.AgentAlive && got.Address == "https://"+a.Addr() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never registered: %+v %v", got, err)
		}
	}
	if _, err := m.Agents.Kernels(ctx, "both"); err != nil {
		t.Fatalf("calling the agent over mutual TLS: %v", err)
	}
}
