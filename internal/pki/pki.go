package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Roles a certificate may name.
const (
	RoleAgent   = "agent"
	RoleManager = "manager"
)

// backdate is how far before issuance a certificate is valid from, so a
// peer whose clock runs a little behind accepts it at once.
const backdate = time.Minute

// CALifetime is how long a cluster CA is valid: long enough that no
// cluster rotates it by surprise.
const CALifetime = 10 * 365 * 24 * time.Hour

// Identity is who a certificate says its holder is.
type Identity struct {
	Role string
	ID   string
}

func (i Identity) String() string { return i.Role + ":" + i.ID }

// ParseIdentity reads "role:id"; the id may hold colons, the role not.
func ParseIdentity(s string) (Identity, error) {
	role, id, ok := strings.Cut(s, ":")
	if !ok || id == "" || (role != RoleAgent && role != RoleManager) {
		return Identity{}, fmt.Errorf("identity %q: want agent:<id> or manager:<id>", s)
	}
	return Identity{Role: role, ID: id}, nil
}

// CA signs and verifies the cluster's certificates. What it is can be
// replaced while connections use it (Set): a manager adopts a rotated CA,
// and an agent the bundle a renewal brings, from the next handshake on.
type CA struct {
	cur atomic.Pointer[caState]
}

type caState struct {
	cert    *x509.Certificate
	certPEM []byte
	// bundle is certPEM followed by the other CAs trusted beside it (the
	// one being replaced, during a rotation).
	bundle []byte
	// all are the CAs trusted, the CA's own first.
	all  []*x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// NewCA creates a self-signed CA valid from now for CALifetime, and
// returns its certificate and key in PEM.
func NewCA(name string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// LoadCA reads a CA from its PEM certificate and key, checking that they
// belong together and that the certificate is a CA's. The CAs of trusted
// (PEM certificates) verify beside it; it signs alone.
func LoadCA(certPEM, keyPEM []byte, trusted ...[]byte) (*CA, error) {
	ca, err := CACert(certPEM, trusted...)
	if err != nil {
		return nil, err
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("ca key: %w", err)
	}
	st := ca.cur.Load()
	if !key.PublicKey.Equal(st.cert.PublicKey) {
		return nil, errors.New("ca key does not match its certificate")
	}
	st.key = key
	return ca, nil
}

// CACert is the CA as certificates alone: it verifies, and cannot sign
// (an agent's view of the cluster CA). bundlePEM may hold several CAs,
// all trusted (the new and the old, during a rotation); the first is the
// CA's own certificate. trusted adds more.
func CACert(bundlePEM []byte, trusted ...[]byte) (*CA, error) {
	st := &caState{pool: x509.NewCertPool()}
	for _, b := range append([][]byte{bundlePEM}, trusted...) {
		certs, err := parseCerts(b)
		if err != nil {
			return nil, fmt.Errorf("ca certificate: %w", err)
		}
		for _, c := range certs {
			if !c.IsCA {
				return nil, errors.New("ca certificate: not a CA")
			}
			if st.cert == nil {
				st.cert = c
				st.certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
			}
			st.pool.AddCert(c)
			st.all = append(st.all, c)
			st.bundle = append(st.bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
	}
	ca := &CA{}
	ca.cur.Store(st)
	return ca, nil
}

// parseCerts reads every PEM certificate of b, at least one.
func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for len(b) > 0 {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, errors.New("not a PEM certificate")
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("not a PEM certificate")
	}
	return out, nil
}

// Snapshot is the CA as it is now, unchanged by a later Set.
func (ca *CA) Snapshot() *CA {
	out := &CA{}
	out.cur.Store(ca.cur.Load())
	return out
}

// Set makes ca what next is now: its certificate, key and trusted CAs.
func (ca *CA) Set(next *CA) { ca.cur.Store(next.cur.Load()) }

// Pool is the set of roots the CA verifies with: its own certificate and
// those trusted beside it.
func (ca *CA) Pool() *x509.CertPool { return ca.cur.Load().pool }

// Cert is the CA's own certificate, the one it signs under.
func (ca *CA) Cert() *x509.Certificate { return ca.cur.Load().cert }

// CertPEM is Cert in PEM.
func (ca *CA) CertPEM() []byte { return ca.cur.Load().certPEM }

// Bundle is every CA certificate trusted, the CA's own first, in PEM:
// what a peer must trust to verify certificates of any of them.
func (ca *CA) Bundle() []byte { return ca.cur.Load().bundle }

// Fingerprints are the Fingerprints of every CA trusted, the CA's own
// first.
func (ca *CA) Fingerprints() []string {
	var out []string
	for _, c := range ca.cur.Load().all {
		out = append(out, Fingerprint(c))
	}
	return out
}

// Fingerprint is the CA's own certificate's Fingerprint.
func (ca *CA) Fingerprint() string { return Fingerprint(ca.Cert()) }

// Issued reports whether the CA's own key signed cert, a certificate
// verified already against Pool: one of a CA trusted beside it (the one a
// rotation replaces) was not. Among trusted CAs the key ids tell which
// signed it without a signature check (it runs on every heartbeat); both
// CAs of a rotation have the same name, so the name cannot.
func (ca *CA) Issued(cert *x509.Certificate) bool {
	own := ca.Cert()
	if len(cert.AuthorityKeyId) > 0 && len(own.SubjectKeyId) > 0 {
		return bytes.Equal(cert.AuthorityKeyId, own.SubjectKeyId)
	}
	return bytes.Equal(cert.RawIssuer, own.RawSubject) && cert.CheckSignatureFrom(own) == nil
}

// Sign issues a certificate naming id for the key of csrPEM, valid from
// now for ttl, and (for a server reached by name) hosts: DNS names and IP
// addresses. Whatever names the request asks for are ignored: the
// identity is the signer's decision, never the requester's.
func (ca *CA) Sign(csrPEM []byte, id Identity, ttl time.Duration, now time.Time, hosts ...string) ([]byte, error) {
	if _, err := ParseIdentity(id.String()); err != nil {
		return nil, err
	}
	st := ca.cur.Load()
	if st.key == nil {
		return nil, errors.New("this CA holds no key to sign with")
	}
	if ttl <= 0 {
		return nil, errors.New("ttl must be positive")
	}
	block, _ := pem.Decode(csrPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("csr: not a PEM certificate request")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("csr: %w", err)
	}
	// The signature proves the requester holds the key it asks a
	// certificate for.
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("csr: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(ttl)
	if notAfter.After(st.cert.NotAfter) {
		notAfter = st.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: id.String()},
		URIs:         []*url.URL{{Scheme: id.Role, Opaque: id.ID}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Both: an agent calls managers and serves their calls, and so
		// does a manager the other way round.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, st.cert, csr.PublicKey, st.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Issue makes a key and a certificate for it naming id: what a manager,
// which holds the CA, gives itself.
func (ca *CA) Issue(id Identity, ttl time.Duration, now time.Time, hosts ...string) (certPEM, keyPEM []byte, err error) {
	key, err := NewKey()
	if err != nil {
		return nil, nil, err
	}
	csr, err := NewCSR(key)
	if err != nil {
		return nil, nil, err
	}
	if certPEM, err = ca.Sign(csr, id, ttl, now, hosts...); err != nil {
		return nil, nil, err
	}
	keyPEM, err = EncodeKey(key)
	return certPEM, keyPEM, err
}

// ErrRevoked is a certificate whose serial was revoked.
var ErrRevoked = errors.New("certificate revoked")

// Verify checks that cert was issued by this CA and is valid at now, that
// revoked (may be nil) does not hold its serial, and returns the identity
// it names.
func (ca *CA) Verify(cert *x509.Certificate, now time.Time, revoked func(serial string) bool) (Identity, error) {
	_, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return Identity{}, err
	}
	if revoked != nil && revoked(Serial(cert)) {
		return Identity{}, fmt.Errorf("%w: serial %s", ErrRevoked, Serial(cert))
	}
	return IdentityOf(cert)
}

// IdentityOf reads the identity a certificate names, without verifying
// it: only for a certificate the TLS handshake already verified.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	if len(cert.URIs) != 1 {
		return Identity{}, errors.New("certificate names no sokovan identity")
	}
	u := cert.URIs[0]
	id, err := ParseIdentity(u.Scheme + ":" + u.Opaque)
	if err != nil {
		return Identity{}, err
	}
	if cert.Subject.CommonName != id.String() {
		return Identity{}, errors.New("certificate's common name and URI name differ")
	}
	return id, nil
}

// Serial is a certificate's serial number as revocation lists hold it.
func Serial(cert *x509.Certificate) string { return hex.EncodeToString(cert.SerialNumber.Bytes()) }

// Fingerprint is the SHA-256 of a certificate's DER, for logs.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// NewKey makes a key pair for a certificate request.
func NewKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// NewCSR writes a certificate request for key in PEM. It names nothing:
// the CA decides the identity.
func NewCSR(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// EncodeKey writes key in PEM.
func EncodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// ParseKey reads a PEM EC private key.
func ParseKey(keyPEM []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, errors.New("not a PEM EC private key")
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// ParseCert reads the first PEM certificate of b.
func ParseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}
