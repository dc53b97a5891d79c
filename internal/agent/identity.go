package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
)

// Files of an agent's identity in its directory.
const (
	// pairFile holds the certificate and its key together, so a renewal
	// replaces both in one rename: a crash between two files would leave
	// a key that matches no certificate, and an agent locked out.
	pairFile = "agent.pem"
	caFile   = "cluster-ca.pem"
)

// Identity is the agent's certificate from the cluster CA: it presents it
// to managers, whose calls it accepts only with a manager certificate of
// the same CA, and renews it before it expires.
type Identity struct {
	dir  string
	ca   *pki.CA
	pair *pki.Keypair
	// soon asks the renewals to renew now: the managers rotate the
	// cluster CA and this certificate is of the old one.
	soon chan struct{}
}

// Joined reports whether dir holds an identity already.
func Joined(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, pairFile))
	return err == nil
}

// JoinCluster gives the agent id its identity: the one kept in dir if
// there is one still valid, or a new one joined with token through the
// managers at managers, whose certificate roots (the cluster CA) must
// have signed naming a manager. The key never leaves the agent; only its
// certificate request does.
//
// A certificate that expired while the agent was away cannot be renewed
// (renewal is authenticated by the certificate itself), so with a token
// the agent joins again and the new identity replaces the old in dir;
// nothing else of the agent's state is touched. The managers let an id
// join again once its certificate has expired.
func JoinCluster(ctx context.Context, managers string, roots *x509.CertPool, id domain.AgentID, token, dir string) (*Identity, error) {
	if Joined(dir) {
		ident, err := LoadIdentity(dir)
		if err != nil {
			return nil, err
		}
		expired := ident.Expires()
		if !time.Now().After(expired) {
			return ident, nil
		}
		if token == "" {
			return nil, fmt.Errorf("agent %s: the certificate in %s expired at %s: give a new join token "+
				"(sokovan agent token create) to join again", id, dir, expired.Format(time.RFC3339))
		}
	}
	if token == "" {
		return nil, fmt.Errorf("agent %s holds no certificate in %s: give a join token (sokovan agent token create)", id, dir)
	}
	if roots == nil {
		return nil, errors.New("joining needs the cluster CA to check the managers with: --ca (sokovan agent token create --ca-out)")
	}
	key, err := pki.NewKey()
	if err != nil {
		return nil, err
	}
	csr, err := pki.NewCSR(key)
	if err != nil {
		return nil, err
	}
	mc := agentrpc.NewManagerClient(managers, "")
	mc.UseTLS(pki.JoinConfig(roots))
	got, err := mc.Join(ctx, agentrpc.Join{Token: token, ID: id, CSR: string(csr)})
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	keyPEM, err := pki.EncodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := save(dir, keyPEM, []byte(got.Certificate), []byte(got.CA)); err != nil {
		return nil, err
	}
	return LoadIdentity(dir)
}

// LoadIdentity reads the identity kept in dir.
func LoadIdentity(dir string) (*Identity, error) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		return b
	}
	certPEM, keyPEM := splitPair(read(pairFile))
	caPEM := read(caFile)
	if keyPEM == nil || certPEM == nil || caPEM == nil {
		return nil, fmt.Errorf("identity in %s: want %s (certificate and key) and %s", dir, pairFile, caFile)
	}
	ca, err := pki.CACert(caPEM)
	if err != nil {
		return nil, err
	}
	pair, err := pki.NewKeypair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("identity in %s: %w", dir, err)
	}
	return &Identity{dir: dir, ca: ca, pair: pair, soon: make(chan struct{}, 1)}, nil
}

// ID is the agent id the certificate names.
func (i *Identity) ID() (domain.AgentID, error) {
	id, err := pki.IdentityOf(i.pair.Leaf())
	return domain.AgentID(id.ID), err
}

// clientTLS presents the agent's certificate to managers and accepts a
// manager's certificate of the cluster CA, whatever address the manager
// was dialled by (an IP address, a load balancer's name): the role the
// cluster's own CA signed is what is checked, not a host name.
func (i *Identity) clientTLS() *tls.Config {
	return pki.ClientConfig(i.ca, i.pair, pki.Peer{Role: pki.RoleManager})
}

// serverTLS serves the agent's RPC to managers only.
func (i *Identity) serverTLS() *tls.Config {
	return pki.ServerConfig(i.ca, i.pair, pki.Peer{Role: pki.RoleManager})
}

// renewals renews the certificate at 2/3 of its lifetime until ctx ends;
// a failed renewal is retried every retry while the certificate lasts.
func (i *Identity) renewals(ctx context.Context, mc *agentrpc.ManagerClient, now func() time.Time,
	retry time.Duration, log *slog.Logger) {
	for {
		// At least a second apart: a manager whose clock runs behind
		// hands out certificates already due, which must not spin.
		wait := pki.RenewAt(i.pair.Leaf()).Sub(now())
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(wait, time.Second)):
		case <-i.soon:
		}
		if err := i.renew(ctx, mc); err != nil {
			log.Warn("certificate not renewed; retrying", "err", err, "expires", i.pair.Leaf().NotAfter)
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			continue
		}
		log.Info("certificate renewed", "expires", i.pair.Leaf().NotAfter)
	}
}

// RenewSoon has the certificate renewed now rather than at 2/3 of its
// lifetime; asking again before that renewal is one request.
func (i *Identity) RenewSoon() {
	select {
	case i.soon <- struct{}{}:
	default:
	}
}

// trustsOnly reports whether the agent trusts no CA but those of
// fingerprints (none given: a manager that does not say).
func (i *Identity) trustsOnly(fingerprints []string) bool {
	if len(fingerprints) == 0 {
		return true
	}
	for _, f := range i.ca.Fingerprints() {
		if !slices.Contains(fingerprints, f) {
			return false
		}
	}
	return true
}

// renew asks for a certificate for a new key and uses it from the next
// connection on; it is kept on disk first, so a restart finds it.
func (i *Identity) renew(ctx context.Context, mc *agentrpc.ManagerClient) error {
	key, err := pki.NewKey()
	if err != nil {
		return err
	}
	csr, err := pki.NewCSR(key)
	if err != nil {
		return err
	}
	got, err := mc.Renew(ctx, agentrpc.Renew{CSR: string(csr)})
	if err != nil {
		return err
	}
	keyPEM, err := pki.EncodeKey(key)
	if err != nil {
		return err
	}
	// The CAs the answer names are those managers may present from now
	// on: during a rotation the new one and the old, after it the new.
	ca, err := pki.CACert([]byte(got.CA))
	if err != nil {
		return fmt.Errorf("renew: the managers' CA: %w", err)
	}
	if err := i.pair.Set([]byte(got.Certificate), keyPEM); err != nil {
		return err
	}
	i.ca.Set(ca)
	mc.CloseIdle()
	return save(i.dir, keyPEM, []byte(got.Certificate), []byte(got.CA))
}

// splitPair parts pairFile's contents into the certificate blocks and
// the key block.
func splitPair(raw []byte) (certPEM, keyPEM []byte) {
	for len(raw) > 0 {
		var b *pem.Block
		if b, raw = pem.Decode(raw); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			certPEM = append(certPEM, pem.EncodeToMemory(b)...)
		} else {
			keyPEM = pem.EncodeToMemory(b)
		}
	}
	return certPEM, keyPEM
}

// save writes the identity's files, each whole or not at all: the CA,
// then the certificate with its key in one file.
func save(dir string, keyPEM, certPEM, caPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if len(keyPEM) == 0 || len(certPEM) == 0 {
		return errors.New("identity: empty certificate or key")
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{caFile, caPEM}, {pairFile, append(append([]byte{}, certPEM...), keyPEM...)}} {
		if len(f.data) == 0 {
			return errors.New("identity: empty " + f.name)
		}
		if err := replaceFile(dir, f.name, f.data); err != nil {
			return err
		}
	}
	// The renames reach the disk with the directory: without this a
	// crash could bring back the old certificate after the managers
	// have moved on from it.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// replaceFile replaces dir/name with data by rename. The temporary file
// is made afresh (mode 0600, a name of its own), never one left behind
// by an earlier run, whose wider mode os.WriteFile would keep for the
// key; it is synced before the rename, so a crash leaves the old file or
// the new one, never an empty one the agent could not start from.
func replaceFile(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// Expires is when the certificate presented now expires.
func (i *Identity) Expires() time.Time { return i.pair.Leaf().NotAfter }
