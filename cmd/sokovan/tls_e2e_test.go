package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeTLSFiles makes a private CA (ECDSA P-256) and a certificate it
// signs for 127.0.0.1, and writes ca.pem, tls.crt and tls.key into dir.
func writeTLSFiles(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	gen := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, key := gen(), gen()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "site CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "manager"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for name, b := range map[string][]byte{
		caFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return caFile, certFile, keyFile
}

// startProcess runs the binary until the test ends (SIGINT, then a kill),
// returning its combined output as it grows.
func startProcess(t *testing.T, env []string, args ...string) *lockedBuffer {
	t.Helper()
	out := &lockedBuffer{}
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return out
}

// runBinary runs the binary to its end and returns its combined output
// and exit code.
func runBinary(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("sokovan %v: %v", args, err)
	}
	return string(out), 0
}

// TestServerTLSEndToEnd runs `sokovan server --tls-cert --tls-key` and
// drives it over https as users and agents would: the CLI trusts the
// site's CA through --ca, SOKOVAN_CA or a saved login and fails, naming
// the cause, without it; an agent given --ca registers.
func TestServerTLSEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTLSFiles(t, dir)
	addr := freeAddr(t)
	url := "https://" + addr
	base := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "PATH=" + os.Getenv("PATH")}
	server := startProcess(t, append(base, "SOKOVAN_ADMIN_TOKEN=admin-secret-0123456789"), "server", "--db", filepath.Join(dir, "s.db"),
		"--listen", addr, "--agent-token", "agent-secret-0123456789", "--insecure-shared-agent-token", "--tls-cert", certFile, "--tls-key", keyFile)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(server.String(), "manager on "+url); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not announce %s:\n%s", url, server.String())
		}
	}
	user := append(base, "SOKOVAN_ADDR="+url, "SOKOVAN_TOKEN=admin-secret-0123456789")
	// The dashboard is served over the same TLS.
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get(url + "/")
	if err != nil {
		t.Fatalf("dashboard over https: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "<html") {
		t.Fatalf("dashboard over https: %d\n%.200s", resp.StatusCode, page)
	}

	out, code := runBinary(t, user, "agent", "ls")
	if code == 0 || !strings.Contains(out, "unknown authority") || !strings.Contains(out, "--ca") {
		t.Fatalf("agent ls without the CA: exit %d\n%s\nwant a failure naming the unknown authority and --ca", code, out)
	}
	if out, code := runBinary(t, user, "agent", "ls", "--ca", caFile); code != 0 {
		t.Fatalf("agent ls --ca: exit %d\n%s", code, out)
	}
	if out, code := runBinary(t, append(user, "SOKOVAN_CA="+caFile), "agent", "ls"); code != 0 {
		t.Fatalf("agent ls with SOKOVAN_CA: exit %d\n%s", code, out)
	}
	// login keeps the CA with the address, for the commands after it.
	if out, code := runBinary(t, base, "login", "--addr", url, "--token", "admin-secret-0123456789", "--ca", caFile); code != 0 {
		t.Fatalf("login --ca: exit %d\n%s", code, out)
	}
	if out, code := runBinary(t, base, "agent", "ls"); code != 0 {
		t.Fatalf("agent ls after login --ca: exit %d\n%s", code, out)
	}

	agentOut := startProcess(t, base, "agent", "run", "--manager", url, "--ca", caFile, "--token", "agent-secret-0123456789",
		"--id", "tls-agent", "--runtime", "sim", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "agent"),
		"--cpu", "1", "--mem", "1g", "--devices", "none", "--heartbeat", "200ms")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _ := runBinary(t, base, "agent", "ls")
		if strings.Contains(out, "tls-agent") && strings.Contains(out, "ALIVE") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent given --ca did not register over https:\n%s\nagent:\n%s", out, agentOut.String())
		}
	}
}

// TestServerRefusesUnusableTLSFlags: a key path that does not exist, or
// one of the pair alone, stops the server before it serves, naming the
// flag.
func TestServerRefusesUnusableTLSFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, certFile, keyFile := writeTLSFiles(t, dir)
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"missing key":  {[]string{"--tls-cert", certFile, "--tls-key", filepath.Join(dir, "nope.key")}, "--tls-key"},
		"missing cert": {[]string{"--tls-cert", filepath.Join(dir, "nope.crt"), "--tls-key", keyFile}, "--tls-cert"},
		"key alone":    {[]string{"--tls-key", keyFile}, "--tls-key needs --tls-cert"},
		"mismatched":   {[]string{"--tls-cert", certFile, "--tls-key", certFile}, "--tls-key"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"server", "--db", filepath.Join(t.TempDir(), "s.db"), "--listen", "127.0.0.1:0",
				"--agent-token", "x", "--insecure-shared-agent-token"}, tc.args...)
			out, code := runBinary(t, env, args...)
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("server %v: exit %d\n%s\nwant a failure naming %s", tc.args, code, out, tc.want)
			}
		})
	}
}

// TestPortForwardTrustsTheCA: port-forward's proxy to an https manager
// trusts what the rest of the client trusts (--ca), not only the
// system's authorities.
func TestPortForwardTrustsTheCA(t *testing.T) {
	t.Parallel()
	mgr := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer mgr.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: mgr.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := dial(mgr.URL, "tok", caFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- forward(ctx, ln, c, "/v1/sessions/s1/proxy/http/") }()
	defer func() { cancel(); <-done }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/index.html")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if want := "/v1/sessions/s1/proxy/http/index.html Bearer tok"; resp.StatusCode != http.StatusOK || string(body) != want {
		t.Fatalf("through port-forward: %d %q, want 200 %q", resp.StatusCode, body, want)
	}
}
