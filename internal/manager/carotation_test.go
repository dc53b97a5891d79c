package manager_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
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

// identityCluster is one manager with agents' identities on and agents
// joined to it, all over real TLS in this process.
type identityCluster struct {
	t   *testing.T
	ctx context.Context
	m   *manager.Manager
	db  string
}

func newIdentityCluster(t *testing.T) *identityCluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db := filepath.Join(t.TempDir(), "s.db")
	m, err := manager.Open(ctx, manager.Config{DB: db, Listen: "127.0.0.1:0", AgentIdentity: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &identityCluster{t: t, ctx: ctx, m: m, db: db}
}

// join starts agent id, joined with a fresh token, heartbeating every
// 50 ms, and waits until it is ALIVE; it returns its identity directory.
func (c *identityCluster) join(id domain.AgentID) string {
	c.t.Helper()
	token, now := pki.NewJoinToken(), time.Now()
	if err := c.m.Store.CreateJoinToken(c.ctx, store.JoinToken{ID: "j-" + string(id), CreatedAt: now,
		ExpiresAt: now.Add(time.Hour), Uses: 1}, pki.HashJoinToken(token)); err != nil {
		c.t.Fatal(err)
	}
	ca, err := pki.CACert(c.m.ClusterCA)
	if err != nil {
		c.t.Fatal(err)
	}
	dir := c.t.TempDir()
	ident, err := agent.JoinCluster(c.ctx, c.m.URL(), ca.Pool(), id, token, dir)
	if err != nil {
		c.t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: id, ResourceGroup: "default", Manager: c.m.URL(), Listen: "127.0.0.1:0",
		Capacity: map[string]string{"cpu": "1", "mem": "1g"}, HeartbeatInterval: 50 * time.Millisecond, Identity: ident})
	if err != nil {
		c.t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		c.t.Fatal(err)
	}
	go a.Run(c.ctx, rt)
	c.eventually("agent "+string(id)+" ALIVE", func() bool {
		got, err := c.m.Store.GetAgent(c.ctx, id)
		return err == nil && got.Status == domain.AgentAlive && got.Address == "https://"+a.Addr()
	})
	return dir
}

func (c *identityCluster) eventually(what string, ok func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			c.t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// heartbeatAfter is whether the agent's heartbeats reach the manager
// after t: its certificate is accepted on a fresh look.
func (c *identityCluster) heartbeatAfter(id domain.AgentID, t time.Time) bool {
	got, err := c.m.Store.GetAgent(c.ctx, id)
	return err == nil && got.Status == domain.AgentAlive && got.LastHeartbeat.After(t)
}

// callWith calls the manager's renew route presenting cert: 401 or a
// refused handshake (0) is a certificate refused; 400 (the request is
// empty) is one accepted.
func (c *identityCluster) callWith(cert tls.Certificate) int {
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, ServerName: pki.ClusterServerName, InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(c.m.URL()+"/v1/agent/renew", "application/json", strings.NewReader(`{"csr":""}`))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// managerIssuer is the CA that signed the certificate the manager serves
// agents now.
func (c *identityCluster) managerIssuer(cas ...*x509.Certificate) int {
	conn, err := tls.Dial("tcp", strings.TrimPrefix(c.m.URL(), "https://"),
		&tls.Config{ServerName: pki.ClusterServerName, InsecureSkipVerify: true})
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close()
	leaf := conn.ConnectionState().PeerCertificates[0]
	for i, ca := range cas {
		if leaf.CheckSignatureFrom(ca) == nil {
			return i
		}
	}
	return -1
}

// TestCARotationWithoutDowntime: an agent joined under CA1 keeps working
// while the cluster CA is rotated — its heartbeats and the manager's
// calls to it go on — renews under CA2 because it is told its
// certificate is of the old CA (not at 2/3 of its week), is given both
// CAs, and ends on a CA2 certificate; finishing is refused while an agent
// still holds only a CA1 certificate, naming it; after finishing the
// manager serves a CA2 certificate and a CA1 certificate is refused.
func TestCARotationWithoutDowntime(t *testing.T) {
	t.Parallel()
	c := newIdentityCluster(t)
	dir := c.join("a1")
	old, err := c.m.Store.ClusterCA(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ca1, err := pki.LoadCA(old.CertPEM, old.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// A certificate of CA1 held by someone the manager never hears from
	// again until it is refused.
	c1PEM, k1PEM, err := ca1.Issue(pki.Identity{Role: pki.RoleAgent, ID: "old"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert1, err := tls.X509KeyPair(c1PEM, k1PEM)
	if err != nil {
		t.Fatal(err)
	}

	// An agent joined under CA1 that will not renew (it is switched off):
	// it holds up finishing, named, until it is removed.
	token := pki.NewJoinToken()
	if err := c.m.Store.CreateJoinToken(c.ctx, store.JoinToken{ID: "off", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)},
		pki.HashJoinToken(token)); err != nil {
		t.Fatal(err)
	}
	if err := c.m.Store.JoinAgent(c.ctx, pki.HashJoinToken(token), store.AgentCertificate{Serial: "0ff", Agent: "off",
		NotAfter: time.Now().Add(time.Hour)}, time.Now()); err != nil {
		t.Fatal(err)
	}

	// `sokovan ca rotate`, as the API does it.
	c2PEM, k2PEM, err := pki.NewCA("sokovan cluster CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := pki.LoadCA(c2PEM, k2PEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.m.Store.RotateClusterCA(c.ctx, store.ClusterCA{CertPEM: c2PEM, KeyPEM: k2PEM}, ca1.Fingerprint(), time.Now()); err != nil {
		t.Fatal(err)
	}
	c.m.IdentityChanged(c.ctx)
	rotated := time.Now()

	if got := c.callWith(cert1); got != http.StatusBadRequest {
		t.Fatalf("a CA1 certificate during the rotation: %d, want it accepted (400 for the empty request)", got)
	}
	if got := c.managerIssuer(ca1.Cert(), ca2.Cert()); got != 0 {
		t.Fatalf("during the rotation the manager serves a certificate of CA%d, want CA1 (agents not renewed trust only it)", got+1)
	}
	c.eventually("a1 renewed under CA2", func() bool {
		stale, err := c.m.Store.StaleAgents(c.ctx, ca2.Fingerprint(), time.Now())
		return err == nil && len(stale) == 1 && stale[0] == "off"
	})
	// The manager records the certificate before the agent has it.
	c.eventually("a1 keeps a CA2 certificate", func() bool {
		pair, err := os.ReadFile(filepath.Join(dir, "agent.pem"))
		leaf, perr := pki.ParseCert(pair)
		return err == nil && perr == nil && leaf.CheckSignatureFrom(ca2.Cert()) == nil
	})
	bundle, err := os.ReadFile(filepath.Join(dir, "cluster-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(bundle), "BEGIN CERTIFICATE"); n != 2 {
		t.Fatalf("a1 trusts %d CAs during the rotation, want both", n)
	}
	c.eventually("a1 heartbeats after renewing", func() bool { return c.heartbeatAfter("a1", rotated) })
	if _, err := c.m.Agents.Kernels(c.ctx, "a1"); err != nil {
		t.Fatalf("calling a1 during the rotation: %v", err)
	}

	var pending *store.CARotationPending
	if err := c.m.Store.FinishCARotation(c.ctx, ca2.Fingerprint(), time.Now()); !errors.As(err, &pending) ||
		len(pending.Agents) != 1 || pending.Agents[0] != "off" {
		t.Fatalf("finishing with agent off on CA1: %v, want it refused naming off", err)
	}
	if _, err := c.m.Store.RevokeAgentCertificates(c.ctx, "off", time.Now()); err != nil { // agent rm
		t.Fatal(err)
	}
	finishing := time.Now()
	if err := c.m.Store.FinishCARotation(c.ctx, ca2.Fingerprint(), time.Now()); err != nil {
		t.Fatal(err)
	}
	c.m.IdentityChanged(c.ctx)
	if got := c.managerIssuer(ca1.Cert(), ca2.Cert()); got != 1 {
		t.Fatalf("after the rotation the manager serves a certificate of CA%d, want CA2", got+1)
	}
	if got := c.callWith(cert1); got != 0 && got != http.StatusUnauthorized {
		t.Fatalf("a CA1 certificate after the rotation: %d, want it refused", got)
	}
	// The manager's next call to a1 handshakes afresh, presenting its
	// CA2 certificate.
	c.m.Agents.DropRevoked(func(string) bool { return true })
	c.eventually("a1 heartbeats after the rotation", func() bool { return c.heartbeatAfter("a1", finishing) })
	if _, err := c.m.Agents.Kernels(c.ctx, "a1"); err != nil {
		t.Fatalf("calling a1 after the rotation: %v", err)
	}
	// a1 stops trusting CA1 within a heartbeat, not at its next renewal
	// days later: a manager certificate made with CA1's key (the reason
	// to rotate, if it leaked) no longer fools it.
	c.eventually("a1 trusts CA2 alone", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "cluster-ca.pem"))
		return err == nil && strings.Count(string(b), "BEGIN CERTIFICATE") == 1 && strings.Contains(string(b), strings.TrimSpace(string(c2PEM)))
	})
}

// TestRevokeDropsOpenConnections: a connection the manager already holds
// to an agent is not used on once the agent's certificate is revoked
// (`agent rm` on this manager): the next call handshakes again and is
// refused, rather than ride the pooled connection checked before.
func TestRevokeDropsOpenConnections(t *testing.T) {
	t.Parallel()
	c := newIdentityCluster(t)
	c.join("r1")
	if _, err := c.m.Agents.Kernels(c.ctx, "r1"); err != nil {
		t.Fatalf("calling r1: %v", err)
	}
	if _, err := c.m.Store.RevokeAgentCertificates(c.ctx, "r1", time.Now()); err != nil {
		t.Fatal(err)
	}
	c.m.IdentityChanged(c.ctx) // what the API's agent rm does after revoking
	if _, err := c.m.Agents.Kernels(c.ctx, "r1"); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("calling r1 after its certificate was revoked: %v, want a refusal", err)
	}
}

// TestOtherManagersAdoptARotation: a rotation made through one manager
// is adopted by another on the same store without being told (it reads
// the CA every 5 s): it accepts certificates of the new CA, and after the
// finish refuses those of the old.
func TestOtherManagersAdoptARotation(t *testing.T) {
	t.Parallel()
	c := newIdentityCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	other, err := manager.Open(ctx, manager.Config{DB: c.db, Listen: "127.0.0.1:0", AgentIdentity: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- other.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	o := &identityCluster{t: t, ctx: ctx, m: other}

	old, err := c.m.Store.ClusterCA(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ca1, err := pki.LoadCA(old.CertPEM, old.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c2PEM, k2PEM, err := pki.NewCA("sokovan cluster CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := pki.LoadCA(c2PEM, k2PEM)
	if err != nil {
		t.Fatal(err)
	}
	pairOf := func(ca *pki.CA) tls.Certificate {
		cp, kp, err := ca.Issue(pki.Identity{Role: pki.RoleAgent, ID: "x"}, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(cp, kp)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	cert1, cert2 := pairOf(ca1), pairOf(ca2)
	if got := o.callWith(cert2); got != 0 && got != http.StatusUnauthorized {
		t.Fatalf("a CA2 certificate before the rotation: %d, want it refused", got)
	}
	if err := c.m.Store.RotateClusterCA(c.ctx, store.ClusterCA{CertPEM: c2PEM, KeyPEM: k2PEM}, ca1.Fingerprint(), time.Now()); err != nil {
		t.Fatal(err)
	}
	c.m.IdentityChanged(c.ctx)
	o.eventually("the other manager accepts CA2", func() bool { return o.callWith(cert2) == http.StatusBadRequest })
	if got := o.callWith(cert1); got != http.StatusBadRequest {
		t.Fatalf("a CA1 certificate during the rotation: %d, want it accepted", got)
	}
	if err := c.m.Store.FinishCARotation(c.ctx, ca2.Fingerprint(), time.Now()); err != nil {
		t.Fatal(err)
	}
	c.m.IdentityChanged(c.ctx)
	o.eventually("the other manager refuses CA1", func() bool {
		got := o.callWith(cert1)
		return got == 0 || got == http.StatusUnauthorized
	})
	o.eventually("the other manager serves a CA2 certificate", func() bool { return o.managerIssuer(ca2.Cert()) == 0 })
}
