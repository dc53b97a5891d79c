package manager_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
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
)

// testCA signs server certificates for 127.0.0.1, as a site's private CA
// would.
type testCA struct {
	t    *testing.T
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{t: t, cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a certificate for 127.0.0.1 with serial, and its key, to
// certFile and keyFile.
func (ca *testCA) issue(serial int64, certFile, keyFile string) {
	ca.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "manager"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	// Written beside and renamed over, as a rotation tool would, so the
	// manager never reads half a file.
	for name, b := range map[string][]byte{
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(name+".new", b, 0o600); err != nil {
			ca.t.Fatal(err)
		}
		if err := os.Rename(name+".new", name); err != nil {
			ca.t.Fatal(err)
		}
	}
}

// client trusts the CA alone and opens a connection per request, so each
// sees the certificate served at that moment.
func (ca *testCA) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// servedSerial is the serial of the certificate the manager presents.
func servedSerial(t *testing.T, hc *http.Client, url string) int64 {
	t.Helper()
	resp, err := hc.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /healthz: %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
}

// TestManagerServesTLS starts a manager with a certificate of a private
// CA: it answers https with it, refuses TLS 1.1, takes an agent that
// trusts the CA, and serves a certificate rotated on disk from the next
// connection on without a restart.
func TestManagerServesTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := newTestCA(t)
	ca.issue(100, certFile, keyFile)
	ctx, cancel := context.WithCancel(context.Background())
	m, err := manager.Open(ctx, manager.Config{DB: filepath.Join(dir, "s.db"), Listen: "127.0.0.1:0", AgentToken: "tok",
		TLSCert: certFile, TLSKey: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if !strings.HasPrefix(m.URL(), "https://") {
		t.Fatalf("URL() = %s, want https://", m.URL())
	}
	hc := ca.client()
	if got := servedSerial(t, hc, m.URL()); got != 100 {
		t.Fatalf("served certificate serial %d, want 100 (the one in --tls-cert)", got)
	}
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MaxVersion: tls.VersionTLS11,
		InsecureSkipVerify: true}}} // only the version is under test
	if resp, err := old.Get(m.URL() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("a TLS 1.1 client was served; want TLS 1.2 at least")
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	a, err := agent.New(agent.Config{ID: "tls-agent", ResourceGroup: "default", Manager: m.URL(), Token: "tok",
		ManagerCAs: pool, Listen: "127.0.0.1:0", Capacity: map[string]string{"cpu": "1", "mem": "1g"},
		HeartbeatInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sim.New(sim.Config{Sink: a.Sink})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx, rt)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ag, err := m.Store.GetAgent(ctx, "tls-agent")
		if err == nil && ag.Status == domain.AgentAlive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent trusting the CA did not register over https: %+v %v", ag, err)
		}
	}

	ca.issue(200, certFile, keyFile)
	if got := servedSerial(t, hc, m.URL()); got != 200 {
		t.Fatalf("after rotation the manager serves serial %d, want 200 (the new file)", got)
	}
	// A half-written rotation (a key that does not match) keeps the last
	// good pair in service.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, hc, m.URL()); got != 200 {
		t.Fatalf("with a broken key on disk the manager serves serial %d, want 200 still", got)
	}
}

// TestManagerRefusesUnusableTLSFiles: a certificate without its key, or
// a key path that does not exist, stops Open, naming the file.
func TestManagerRefusesUnusableTLSFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	newTestCA(t).issue(1, certFile, keyFile)
	missing := filepath.Join(dir, "missing.key")
	for name, cfg := range map[string]manager.Config{
		"cert alone":  {TLSCert: certFile},
		"missing key": {TLSCert: certFile, TLSKey: missing},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.DB, cfg.Listen, cfg.AgentToken = filepath.Join(t.TempDir(), "s.db"), "127.0.0.1:0", "tok"
			m, err := manager.Open(context.Background(), cfg)
			if err == nil {
				t.Fatalf("Open served %s; want an error", m.URL())
			}
			if cfg.TLSKey != "" && !strings.Contains(err.Error(), missing) {
				t.Errorf("error %q does not name %s", err, missing)
			}
		})
	}
}
