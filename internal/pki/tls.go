package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Keypair is a certificate and its key that can be replaced while
// connections use it: a renewed certificate is presented from the next
// handshake on, without a restart.
type Keypair struct {
	cur atomic.Pointer[tls.Certificate]
}

// NewKeypair holds the PEM certificate and key.
func NewKeypair(certPEM, keyPEM []byte) (*Keypair, error) {
	k := &Keypair{}
	return k, k.Set(certPEM, keyPEM)
}

// Set replaces the certificate and key.
func (k *Keypair) Set(certPEM, keyPEM []byte) error {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return err
		}
	}
	k.cur.Store(&c)
	return nil
}

// TLSCertificate is the certificate and key presented now.
func (k *Keypair) TLSCertificate() *tls.Certificate { return k.cur.Load() }

// Leaf is the certificate presented now.
func (k *Keypair) Leaf() *x509.Certificate { return k.cur.Load().Leaf }

// RenewAt is when a certificate should be renewed: at two thirds of its
// lifetime, so a renewal that fails has a third left to be retried.
// The lifetime counts from issuance, not from the backdated NotBefore, so
// a short-lived certificate is not renewed the moment it arrives.
func RenewAt(cert *x509.Certificate) time.Time {
	issued := cert.NotBefore.Add(backdate)
	return issued.Add(cert.NotAfter.Sub(issued) * 2 / 3)
}

// Peer says who may be on the other end: a role, (when not empty) the id
// it must name, and (when not nil) a check of its serial against revoked
// ones.
type Peer struct {
	Role string
	// ID pins one peer: a manager dialling agent A must reach A, not
	// another agent of the cluster that answers at A's address.
	ID      string
	Revoked func(serial string) bool
}

// ClusterServerName is the name (SNI) a peer of the cluster asks for: a
// manager that also serves an operator's certificate (--tls-cert) to
// users answers it with its cluster-CA certificate. Manager certificates
// name it, so even a client checking host names accepts it.
const ClusterServerName = "cluster.sokovan.internal"

// ServerConfig serves with k and requires a client certificate of the CA
// naming p's role.
func ServerConfig(ca *CA, k *Keypair, p Peer) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return k.cur.Load(), nil },
		// The chain is verified in VerifyConnection against the CAs
		// trusted at that handshake: ClientCAs would fix them for good,
		// and a rotation changes them.
		ClientAuth: tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return checkPeer(ca.Pool(), cs, p)
		},
	}
}

// OptionalClientConfig is ServerConfig for a listener that also serves
// callers without a certificate (users of the API): a certificate, when
// given, must verify, and the handler reads who it names.
func OptionalClientConfig(ca *CA, k *Keypair) *tls.Config {
	return AcceptClientCerts(&tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return k.cur.Load(), nil },
	}, ca)
}

// AcceptClientCerts makes a server configuration (one presenting an
// operator's certificate, say) also take client certificates of ca, when
// given: users without one are served as before, and the agent gateway
// reads who a certificate names.
func AcceptClientCerts(c *tls.Config, ca *CA) *tls.Config {
	c = c.Clone()
	// Verified below against the CAs trusted at this handshake, which a
	// rotation changes; ClientCAs would fix them for good.
	c.ClientAuth = tls.RequestClientCert
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return nil
		}
		return checkPeer(ca.Pool(), cs, Peer{})
	}
	return c
}

// WithClusterCertificate makes a server configuration that presents an
// operator's certificate to users (--tls-cert) present k, the cluster-CA
// certificate, to peers that ask for ClusterServerName, and take client
// certificates of ca: one port serves users a certificate their browsers
// trust and agents the cluster's mutual TLS.
func WithClusterCertificate(c *tls.Config, ca *CA, k *Keypair) *tls.Config {
	c = AcceptClientCerts(c, ca)
	users := c.GetCertificate
	c.GetCertificate = func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if h.ServerName == ClusterServerName {
			return k.cur.Load(), nil
		}
		if users != nil {
			return users(h)
		}
		return nil, nil // c.Certificates
	}
	return c
}

// ClientConfig presents k and accepts only a server certificate of the
// CA naming p's role. Host names are not checked: agents and managers
// reach each other by whatever address they registered, and the role
// signed by the cluster's own CA is the stronger statement.
func ClientConfig(ca *CA, k *Keypair, p Peer) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return k.cur.Load(), nil
		},
		RootCAs:    ca.Pool(),
		ServerName: ClusterServerName,
		// The chain and the role are verified in VerifyConnection, which
		// runs on every handshake; only the host name check is skipped.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return checkPeer(ca.Pool(), cs, p)
		},
	}
}

// JoinConfig is how an agent without a certificate yet reaches managers
// to join: it presents none, and accepts a server certificate that roots
// (the cluster CA, from --ca) signed naming a manager, whatever address
// the manager was dialled by.
func JoinConfig(roots *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            roots,
		ServerName:         ClusterServerName,
		InsecureSkipVerify: true, // verified below, by role not host name
		VerifyConnection: func(cs tls.ConnectionState) error {
			if roots == nil {
				return errors.New("no CA to check the manager's certificate with")
			}
			return checkPeer(roots, cs, Peer{Role: RoleManager})
		},
	}
}

func checkPeer(roots *x509.CertPool, cs tls.ConnectionState, p Peer) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("peer presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return err
	}
	if p.Revoked != nil && p.Revoked(Serial(leaf)) {
		return fmt.Errorf("%w: serial %s", ErrRevoked, Serial(leaf))
	}
	id, err := IdentityOf(leaf)
	if err != nil {
		return err
	}
	if p.Role != "" && id.Role != p.Role {
		return fmt.Errorf("peer is %s, want a %s", id, p.Role)
	}
	if p.ID != "" && id.ID != p.ID {
		return fmt.Errorf("peer is %s, want %s:%s", id, p.Role, p.ID)
	}
	return nil
}
