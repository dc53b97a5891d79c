package pki

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func testCA(t *testing.T, now time.Time) *CA {
	t.Helper()
	certPEM, keyPEM, err := NewCA("test cluster", now)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// issue makes a key, asks ca for a certificate naming id, and returns the
// pair in PEM.
func issue(t *testing.T, ca *CA, id Identity, ttl time.Duration, now time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := NewCSR(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err = ca.Sign(csr, id, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = EncodeKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

func TestSignedCertificateNamesTheIdentityAskedFor(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ca := testCA(t, now)
	want := Identity{Role: RoleAgent, ID: "node-7"}
	certPEM, _ := issue(t, ca, want, time.Hour, now)
	cert, err := ParseCert(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ca.Verify(cert, now, nil)
	if err != nil || got != want {
		t.Fatalf("Verify = %v, %v; want %v", got, err, want)
	}
	if _, err := ca.Verify(cert, now.Add(2*time.Hour), nil); err == nil {
		t.Fatal("an expired certificate verified")
	}
	revoked := func(s string) bool { return s == Serial(cert) }
	if _, err := ca.Verify(cert, now, revoked); err == nil {
		t.Fatal("a revoked certificate verified")
	}
}

func TestCertificateOfAnotherCAIsRefused(t *testing.T) {
	now := time.Now()
	ours, theirs := testCA(t, now), testCA(t, now)
	certPEM, _ := issue(t, theirs, Identity{Role: RoleAgent, ID: "a"}, time.Hour, now)
	cert, _ := ParseCert(certPEM)
	if _, err := ours.Verify(cert, now, nil); err == nil {
		t.Fatal("a certificate of another CA verified")
	}
}

func TestSignRefusesBadInput(t *testing.T) {
	now := time.Now()
	ca := testCA(t, now)
	key, _ := NewKey()
	csr, _ := NewCSR(key)
	for name, c := range map[string]struct {
		csr []byte
		id  Identity
		ttl time.Duration
	}{
		"no csr":       {nil, Identity{RoleAgent, "a"}, time.Hour},
		"garbage csr":  {[]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"), Identity{RoleAgent, "a"}, time.Hour},
		"unknown role": {csr, Identity{"user", "a"}, time.Hour},
		"empty id":     {csr, Identity{RoleAgent, ""}, time.Hour},
		"no ttl":       {csr, Identity{RoleAgent, "a"}, 0},
	} {
		if _, err := ca.Sign(c.csr, c.id, c.ttl, now); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
}

func TestLoadCARefusesAMismatchedKey(t *testing.T) {
	c1, _, _ := NewCA("one", time.Now())
	_, k2, _ := NewCA("two", time.Now())
	if _, err := LoadCA(c1, k2); err == nil {
		t.Fatal("loaded a CA with another CA's key")
	}
}

// TestMutualTLSChecksRoles: a server that wants managers refuses an agent's
// certificate and accepts a manager's, and a renewed certificate is
// presented without rebuilding the configuration.
func TestMutualTLSChecksRoles(t *testing.T) {
	now := time.Now()
	ca := testCA(t, now)
	srvCert, srvKey := issue(t, ca, Identity{RoleAgent, "node-1"}, time.Hour, now)
	srvPair, err := NewKeypair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := IdentityOf(r.TLS.PeerCertificates[0])
		io.WriteString(w, id.String())
	}))
	srv.Listener = tls.NewListener(srv.Listener, ServerConfig(ca, srvPair, Peer{Role: RoleManager}))
	srv.Start()
	defer srv.Close()
	srv.URL = strings.Replace(srv.URL, "http://", "https://", 1)

	get := func(id Identity) (string, error) {
		c, k := issue(t, ca, id, time.Hour, now)
		pair, err := NewKeypair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ClientConfig(ca, pair, Peer{Role: RoleAgent})}}
		resp, err := hc.Get(srv.URL)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if got, err := get(Identity{RoleManager, "m1"}); err != nil || got != "manager:m1" {
		t.Fatalf("manager's call: %q, %v", got, err)
	}
	if _, err := get(Identity{RoleAgent, "node-2"}); err == nil {
		t.Fatal("an agent's certificate was accepted where managers are required")
	}

	// A client that wants an agent at the other end refuses a manager.
	c, k := issue(t, ca, Identity{RoleManager, "m1"}, time.Hour, now)
	pair, _ := NewKeypair(c, k)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ClientConfig(ca, pair, Peer{Role: RoleManager})}}
	if _, err := hc.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "want a manager") {
		t.Fatalf("a client wanting a manager reached an agent: %v", err)
	}

	// Rotation: the server presents its new certificate from the next
	// handshake on.
	newCert, newKey := issue(t, ca, Identity{RoleAgent, "node-1"}, 2*time.Hour, now)
	if err := srvPair.Set(newCert, newKey); err != nil {
		t.Fatal(err)
	}
	mc, mk := issue(t, ca, Identity{RoleManager, "m1"}, time.Hour, now)
	mpair, _ := NewKeypair(mc, mk)
	tr := &http.Transport{TLSClientConfig: ClientConfig(ca, mpair, Peer{Role: RoleAgent})}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want, _ := ParseCert(newCert)
	if got := resp.TLS.PeerCertificates[0]; Serial(got) != Serial(want) {
		t.Fatal("the server still presents its old certificate")
	}
}

func TestRenewAtTwoThirds(t *testing.T) {
	now := time.Now()
	ca := testCA(t, now)
	c, _ := issue(t, ca, Identity{RoleAgent, "a"}, 3*time.Hour, now)
	cert, _ := ParseCert(c)
	at := RenewAt(cert)
	if at.Before(now.Add(119*time.Minute)) || at.After(now.Add(121*time.Minute)) {
		t.Fatalf("renew at %s, want about 2h after %s", at, now)
	}
	c, _ = issue(t, ca, Identity{RoleAgent, "a"}, 3*time.Second, now)
	cert, _ = ParseCert(c)
	if at := RenewAt(cert); at.Before(now.Add(time.Second)) || at.After(now.Add(3*time.Second)) {
		t.Fatalf("renew at %s, want about 2h after %s", at, now)
	}
}

// TestManagerCheckedByRoleNotHostName: a manager reached by an address its
// certificate does not name (an IP address, a load balancer's name) is
// accepted by an agent joining (JoinConfig) and by one with its
// certificate (ClientConfig) for what the cluster CA signed, a manager;
// a certificate of the CA naming an agent is refused, and so is one of
// another CA. A client checking host names refuses the same manager.
func TestManagerCheckedByRoleNotHostName(t *testing.T) {
	now := time.Now()
	ca := testCA(t, now)
	serve := func(id Identity, signer *CA) string {
		c, k := issue(t, signer, id, time.Hour, now) // names no host at all
		pair, err := NewKeypair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.Listener = tls.NewListener(srv.Listener, OptionalClientConfig(ca, pair))
		srv.Start()
		t.Cleanup(srv.Close)
		return strings.Replace(srv.URL, "http://", "https://", 1) // 127.0.0.1:port
	}
	get := func(cfg *tls.Config, url string) error {
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}).Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	ac, ak := issue(t, ca, Identity{RoleAgent, "n1"}, time.Hour, now)
	agentPair, _ := NewKeypair(ac, ak)
	mgr := serve(Identity{RoleManager, "m1"}, ca)
	if err := get(JoinConfig(ca.Pool()), mgr); err != nil {
		t.Errorf("joining a manager by IP: %v", err)
	}
	if err := get(ClientConfig(ca, agentPair, Peer{Role: RoleManager}), mgr); err != nil {
		t.Errorf("an agent calling a manager by IP: %v", err)
	}
	if err := get(&tls.Config{RootCAs: ca.Pool()}, mgr); err == nil {
		t.Error("a host-name check passed a certificate naming no host: the test proves nothing")
	}
	if err := get(JoinConfig(ca.Pool()), serve(Identity{RoleAgent, "n2"}, ca)); err == nil {
		t.Error("joined through an agent's certificate")
	}
	if err := get(JoinConfig(ca.Pool()), serve(Identity{RoleManager, "m2"}, testCA(t, now))); err == nil {
		t.Error("joined through another CA's manager")
	}
	if err := get(JoinConfig(nil), mgr); err == nil {
		t.Error("joined without a CA to check the manager with")
	}
}

// TestClientConfigPinsThePeer: a manager dialling agent n1 refuses agent
// n2's certificate, valid as it is.
func TestClientConfigPinsThePeer(t *testing.T) {
	now := time.Now()
	ca := testCA(t, now)
	c, k := issue(t, ca, Identity{RoleAgent, "n2"}, time.Hour, now)
	pair, _ := NewKeypair(c, k)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Listener = tls.NewListener(srv.Listener, ServerConfig(ca, pair, Peer{Role: RoleManager}))
	srv.Start()
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "https://", 1)
	mc, mk := issue(t, ca, Identity{RoleManager, "m1"}, time.Hour, now)
	mpair, _ := NewKeypair(mc, mk)
	for id, ok := range map[string]bool{"n1": false, "n2": true} {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ClientConfig(ca, mpair, Peer{Role: RoleAgent, ID: id})}}
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		if (err == nil) != ok {
			t.Errorf("dialling agent %s where n2 answers: %v", id, err)
		}
	}
}

// TestCATrustFollowsSet: a server configuration made before a rotation
// takes client certificates of the CAs trusted at each handshake — a
// new CA's once Set trusts it beside the old, the old's no more once Set
// drops it — and Issued tells the CA's own certificates from those of a
// CA trusted beside it.
func TestCATrustFollowsSet(t *testing.T) {
	now := time.Now()
	ca1 := testCA(t, now)
	c2, k2, err := NewCA("test cluster", now)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey := issue(t, ca1, Identity{RoleAgent, "node-1"}, time.Hour, now)
	srvPair, err := NewKeypair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	trust := ca1.Snapshot()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Listener = tls.NewListener(srv.Listener, ServerConfig(trust, srvPair, Peer{Role: RoleManager}))
	srv.Start()
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "https://", 1)
	call := func(signer *CA) error {
		c, k := issue(t, signer, Identity{RoleManager, "m"}, time.Hour, now)
		pair, err := NewKeypair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ClientConfig(ca1, pair, Peer{Role: RoleAgent})}}
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	ca2, err := LoadCA(c2, k2)
	if err != nil {
		t.Fatal(err)
	}
	if call(ca2) == nil {
		t.Fatal("a certificate of CA2 was accepted before CA2 was trusted")
	}
	rotating, err := LoadCA(c2, k2, ca1.CertPEM())
	if err != nil {
		t.Fatal(err)
	}
	trust.Set(rotating)
	if err := call(ca2); err != nil {
		t.Fatalf("a certificate of CA2 during the rotation: %v", err)
	}
	if err := call(ca1); err != nil {
		t.Fatalf("a certificate of CA1 during the rotation: %v", err)
	}
	if n := strings.Count(string(trust.Bundle()), "BEGIN CERTIFICATE"); n != 2 || string(trust.CertPEM()) != string(c2) {
		t.Fatalf("the bundle holds %d CAs (want 2), the CA's own first", n)
	}
	l1, _ := ParseCert(issueCert(t, ca1))
	l2, _ := ParseCert(issueCert(t, ca2))
	if trust.Issued(l1) || !trust.Issued(l2) {
		t.Fatal("Issued does not tell CA2's certificates from CA1's")
	}
	trust.Set(ca2)
	if call(ca1) == nil {
		t.Fatal("a certificate of CA1 was accepted after the rotation finished")
	}
}

func issueCert(t *testing.T, ca *CA) []byte {
	c, _ := issue(t, ca, Identity{RoleAgent, "x"}, time.Hour, time.Now())
	return c
}
