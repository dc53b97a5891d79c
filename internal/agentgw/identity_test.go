package agentgw_test

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// client calls the gateway over TLS, presenting cert when not nil.
func (m *manager) client(cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: m.joinRoots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

// postWith is post through hc, with the shared token when bearer is set.
func (m *manager) postWith(hc *http.Client, bearer bool, path string, body, out any) (int, string) {
	m.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		m.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(m.ctx, http.MethodPost, m.url+path, bytes.NewReader(raw))
	if err != nil {
		m.t.Fatal(err)
	}
	if bearer {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			m.t.Fatal(err)
		}
		return resp.StatusCode, ""
	}
	var e agentrpc.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}

// join asks for a certificate naming id with the join token and returns
// the status, the refusal and, on success, the key pair.
func (m *manager) join(id domain.AgentID, joinToken string) (int, string, *tls.Certificate) {
	m.t.Helper()
	key, err := pki.NewKey()
	if err != nil {
		m.t.Fatal(err)
	}
	csr, err := pki.NewCSR(key)
	if err != nil {
		m.t.Fatal(err)
	}
	var got agentrpc.Certificate
	code, msg := m.postWith(m.client(nil), false, "/v1/agent/join",
		agentrpc.Join{Token: joinToken, ID: id, CSR: string(csr)}, &got)
	if code != http.StatusOK {
		return code, msg, nil
	}
	keyPEM, err := pki.EncodeKey(key)
	if err != nil {
		m.t.Fatal(err)
	}
	pair, err := tls.X509KeyPair([]byte(got.Certificate), keyPEM)
	if err != nil {
		m.t.Fatal(err)
	}
	leaf, err := pki.ParseCert([]byte(got.Certificate))
	if err != nil {
		m.t.Fatal(err)
	}
	if named, err := m.ca.Verify(leaf, m.clock.Now(), nil); err != nil || named != (pki.Identity{Role: pki.RoleAgent, ID: string(id)}) {
		m.t.Fatalf("certificate for %s names %v (%v)", id, named, err)
	}
	return code, msg, &pair
}

// TestCertificateStopsTakeover reproduces the takeover of issue 28: a
// caller holding a valid credential registers a live agent's id from the
// agent's own address, which the manager takes for a restart, ending the
// agent's RUNNING sessions. With identities the credential is a
// certificate naming the caller, and a body naming another agent is
// refused whatever address it gives; joining again under the victim's id
// is refused while the victim's certificate is live, and the shared token
// is no credential at all.
func TestCertificateStopsTakeover(t *testing.T) {
	t.Parallel()
	m := newIdentityManager(t)
	m.startAgent("x", sim.Config{})
	id := m.submit("sleep", nil)
	m.cycleUntil(id, domain.SessionRunning)
	before := m.agent("x")
	if !strings.HasPrefix(before.Address, "https://") {
		t.Fatalf("agent x registered %s, want its TLS address", before.Address)
	}

	code, msg, mallory := m.join("mallory", m.joinToken)
	if code != http.StatusOK {
		t.Fatalf("mallory joining as itself: %d %q", code, msg)
	}
	takeover := agentrpc.Register{ID: "x", ResourceGroup: "default", Address: before.Address, Architecture: "x86_64",
		Runtime: "sim", Capacity: map[string]string{"cpu": "4", "mem": "8g"}}
	code, msg = m.postWith(m.client(mallory), false, "/v1/agent/register", takeover, nil)
	if code != http.StatusForbidden || !strings.Contains(msg, "agent:mallory") {
		t.Errorf("mallory registering x from x's address: %d %q, want 403 naming its certificate", code, msg)
	}
	hb := agentrpc.Heartbeat{ID: "x", Epoch: before.Epoch}
	if code, msg = m.postWith(m.client(mallory), false, "/v1/agent/heartbeat", hb, nil); code != http.StatusForbidden {
		t.Errorf("mallory heartbeating for x: %d %q, want 403", code, msg)
	}
	if code, msg, _ = m.join("x", m.joinToken); code != http.StatusConflict {
		t.Errorf("joining again as the live x: %d %q, want 409", code, msg)
	}
	if code, msg = m.postWith(m.client(nil), true, "/v1/agent/register", takeover, nil); code != http.StatusUnauthorized {
		t.Errorf("registering x with the shared token: %d %q, want 401", code, msg)
	}

	after := m.agent("x")
	if after.Epoch != before.Epoch || after.Status != domain.AgentAlive {
		t.Errorf("agent x after the attempts: epoch %d %v, want epoch %d ALIVE", after.Epoch, after.Status, before.Epoch)
	}
	if err := m.co.Cycle(m.ctx); err != nil {
		t.Fatal(err)
	}
	if s := m.session(id); s.Session.Status != domain.SessionRunning || s.Kernels[0].Status != domain.KernelRunning {
		t.Fatalf("session after the attempts: %v, kernel %v, want RUNNING", s.Session.Status, s.Kernels[0].Status)
	}

	// Mallory speaking for itself is an agent like any other.
	own := takeover
	own.ID, own.Address = "mallory", "https://203.0.113.7:6001"
	if code, msg = m.postWith(m.client(mallory), false, "/v1/agent/register", own, nil); code != http.StatusOK {
		t.Errorf("mallory registering itself: %d %q, want 200", code, msg)
	}
}

// TestJoinTokenLimits: an unknown, expired or used-up join token gets no
// certificate, and a request without a token, id or CSR is refused
// naming what is missing.
func TestJoinTokenLimits(t *testing.T) {
	t.Parallel()
	m := newIdentityManager(t)
	if code, msg, _ := m.join("a", "skvj_unknown"); code != http.StatusUnauthorized || !strings.Contains(msg, "token") {
		t.Errorf("unknown token: %d %q, want 401", code, msg)
	}
	once := pki.NewJoinToken()
	if err := m.st.CreateJoinToken(m.ctx, storeToken("once", m.clock.Now(), 1, time1h), pki.HashJoinToken(once)); err != nil {
		t.Fatal(err)
	}
	if code, msg, _ := m.join("a", once); code != http.StatusOK {
		t.Fatalf("first use: %d %q", code, msg)
	}
	if code, msg, _ := m.join("b", once); code != http.StatusUnauthorized || !strings.Contains(msg, "used up") {
		t.Errorf("second use of a one-use token: %d %q, want 401", code, msg)
	}
	short := pki.NewJoinToken()
	if err := m.st.CreateJoinToken(m.ctx, storeToken("short", m.clock.Now(), 0, 1), pki.HashJoinToken(short)); err != nil {
		t.Fatal(err)
	}
	m.clock.Advance(2 * time1s)
	if code, msg, _ := m.join("c", short); code != http.StatusUnauthorized || !strings.Contains(msg, "expired") {
		t.Errorf("expired token: %d %q, want 401", code, msg)
	}
	code, msg := m.postWith(m.client(nil), false, "/v1/agent/join", agentrpc.Join{Token: once, ID: "d"}, nil)
	if code != http.StatusBadRequest || !strings.Contains(msg, "csr") {
		t.Errorf("join without a CSR: %d %q, want 400 naming csr", code, msg)
	}
}

const (
	time1s = time.Second
	time1h = 3600
)

func storeToken(id string, now time.Time, uses, ttlSeconds int) store.JoinToken {
	return store.JoinToken{ID: id, CreatedAt: now, ExpiresAt: now.Add(time.Duration(ttlSeconds) * time.Second), Uses: uses}
}

// TestRevokedCertificateRefused: once an agent's certificates are revoked
// (agent rm), its calls are refused within the gateway's refresh of the
// revoked list, on every manager.
func TestRevokedCertificateRefused(t *testing.T) {
	t.Parallel()
	m := newIdentityManager(t)
	code, msg, cert := m.join("gone", m.joinToken)
	if code != http.StatusOK {
		t.Fatalf("join: %d %q", code, msg)
	}
	reg := agentrpc.Register{ID: "gone", ResourceGroup: "default", Address: "https://203.0.113.9:6001",
		Architecture: "x86_64", Runtime: "sim", Capacity: map[string]string{"cpu": "1", "mem": "1g"}}
	if code, msg = m.postWith(m.client(cert), false, "/v1/agent/register", reg, nil); code != http.StatusOK {
		t.Fatalf("register: %d %q", code, msg)
	}
	if _, err := m.st.RevokeAgentCertificates(m.ctx, "gone", m.clock.Now()); err != nil {
		t.Fatal(err)
	}
	m.clock.Advance(6 * time1s)
	hb := agentrpc.Heartbeat{ID: "gone", Epoch: 1}
	if code, msg = m.postWith(m.client(cert), false, "/v1/agent/heartbeat", hb, nil); code != http.StatusUnauthorized ||
		!strings.Contains(msg, "revoked") {
		t.Errorf("heartbeat with a revoked certificate: %d %q, want 401 revoked", code, msg)
	}
}

// TestRenewKeepsTheIdentity: an agent renews with its current certificate
// for a new key, and the new certificate names it again; without a
// certificate there is nothing to renew.
func TestRenewKeepsTheIdentity(t *testing.T) {
	t.Parallel()
	m := newIdentityManager(t)
	code, msg, cert := m.join("r", m.joinToken)
	if code != http.StatusOK {
		t.Fatalf("join: %d %q", code, msg)
	}
	key, _ := pki.NewKey()
	csr, _ := pki.NewCSR(key)
	var got agentrpc.Certificate
	if code, msg = m.postWith(m.client(cert), false, "/v1/agent/renew", agentrpc.Renew{CSR: string(csr)}, &got); code != http.StatusOK {
		t.Fatalf("renew: %d %q", code, msg)
	}
	leaf, err := pki.ParseCert([]byte(got.Certificate))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := m.ca.Verify(leaf, m.clock.Now(), nil); err != nil || id.ID != "r" || pki.Serial(leaf) == pki.Serial(cert.Leaf) {
		t.Errorf("renewed certificate names %v (%v), serial %s; want r under a new serial", id, err, pki.Serial(leaf))
	}
	if !leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(key.Public()) {
		t.Error("the renewed certificate is not for the new key")
	}
	if code, _ = m.postWith(m.client(nil), false, "/v1/agent/renew", agentrpc.Renew{CSR: string(csr)}, nil); code != http.StatusUnauthorized {
		t.Errorf("renew without a certificate: %d, want 401", code)
	}
}

// TestAgentRotatesItsCertificate: a running agent renews its certificate
// at 2/3 of its lifetime and serves with the new one without a restart.
func TestAgentRotatesItsCertificate(t *testing.T) {
	t.Parallel()
	m := newManagerWith(t, true, 3*time1s)
	a := m.startAgent("x", sim.Config{})
	serving := func() string {
		cfg := pki.ClientConfig(m.ca, m.mgrPair, pki.Peer{Role: pki.RoleAgent})
		conn, err := tls.Dial("tcp", a.Addr(), cfg)
		if err != nil {
			m.t.Fatalf("dial agent: %v", err)
		}
		defer conn.Close()
		return pki.Serial(conn.ConnectionState().PeerCertificates[0])
	}
	first := serving()
	m.eventually("a renewed certificate", func() bool { return serving() != first })
}

// TestManagerChecksTheAgentItDials: agent b's certificate answering at
// the address agent a registered (a stale address now b's, or a hijack)
// is refused — the manager must reach a itself, or its kernels would be
// started on b — and so is an agent whose certificate was revoked.
func TestManagerChecksTheAgentItDials(t *testing.T) {
	t.Parallel()
	m := newIdentityManager(t)
	b := m.startAgent("b", sim.Config{})
	if _, err := m.agents.Kernels(m.ctx, "b"); err != nil {
		t.Fatalf("calling b at its own address: %v", err)
	}
	capacity, err := m.reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.st.RegisterAgent(m.ctx, domain.Agent{ID: "a", ResourceGroup: "default", Address: "https://" + b.Addr(),
		Architecture: "x86_64", Runtime: "sim", Capacity: capacity}, m.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.agents.Kernels(m.ctx, "a"); err == nil || !strings.Contains(err.Error(), "want agent:a") {
		t.Fatalf("calling a where b answers: %v, want a refusal naming agent:a", err)
	}

	m.startAgent("c", sim.Config{})
	if _, err := m.st.RevokeAgentCertificates(m.ctx, "c", m.clock.Now()); err != nil {
		t.Fatal(err)
	}
	m.gw.Forget()
	if _, err := m.agents.Kernels(m.ctx, "c"); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("calling c with its certificate revoked: %v, want a refusal", err)
	}
}

// TestExpiredAgentRejoins: an agent that was away past its certificate's
// expiry cannot renew it; started again with a new join token it joins
// again in place — the new certificate replaces the old in its identity
// directory, the rest of its data directory untouched — and without a
// token it is told to get one.
func TestExpiredAgentRejoins(t *testing.T) {
	t.Parallel()
	m := newIdentityManager(t)
	past := time.Now().Add(-3 * time.Hour)
	old := pki.NewJoinToken()
	if err := m.st.CreateJoinToken(m.ctx, store.JoinToken{ID: "old", CreatedAt: past, ExpiresAt: past.Add(2 * time.Hour), Uses: 1},
		pki.HashJoinToken(old)); err != nil {
		t.Fatal(err)
	}
	key, _ := pki.NewKey()
	csr, _ := pki.NewCSR(key)
	certPEM, err := m.ca.Sign(csr, pki.Identity{Role: pki.RoleAgent, ID: "away"}, time.Hour, past)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := pki.ParseCert(certPEM)
	if err := m.st.JoinAgent(m.ctx, pki.HashJoinToken(old), store.AgentCertificate{Serial: pki.Serial(leaf), Agent: "away",
		NotAfter: leaf.NotAfter}, past); err != nil {
		t.Fatal(err)
	}
	// The agent's data directory as a run an hour after that left it: its
	// identity (the file names are the agent's own) and some state.
	data := t.TempDir()
	dir, state := filepath.Join(data, "identity"), filepath.Join(data, "kernels", "k1.log")
	keyPEM, _ := pki.EncodeKey(key)
	for name, b := range map[string][]byte{filepath.Join(dir, "agent.pem"): append(certPEM, keyPEM...),
		filepath.Join(dir, "cluster-ca.pem"): m.ca.CertPEM(), state: []byte("kept")} {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := agent.JoinCluster(m.ctx, m.url, m.joinRoots, "away", "", dir); err == nil ||
		!strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), "join token") {
		t.Fatalf("starting with an expired certificate and no token: %v, want one naming the expiry and a join token", err)
	}
	ident, err := agent.JoinCluster(m.ctx, m.url, m.joinRoots, "away", m.joinToken, dir)
	if err != nil {
		t.Fatalf("rejoining with a new token: %v", err)
	}
	again, err := agent.LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := again.ID(); err != nil || id != "away" {
		t.Fatalf("the kept identity names %q (%v)", id, err)
	}
	for _, i := range []*agent.Identity{ident, again} {
		if !i.Expires().After(time.Now()) {
			t.Fatalf("the identity after rejoining expires at %s, still the expired one", i.Expires())
		}
	}
	if b, err := os.ReadFile(state); err != nil || string(b) != "kept" {
		t.Fatalf("the agent's state after rejoining: %q %v", b, err)
	}
}
