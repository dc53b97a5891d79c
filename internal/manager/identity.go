package manager

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/agentgw"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// managerCertTTL is the lifetime of the certificate a manager gives
// itself; it renews it at 2/3, as agents do theirs.
const managerCertTTL = 30 * 24 * time.Hour

// identity is the manager's side of agents' identities: the cluster CA
// and the manager's own certificate, which it serves TLS with and calls
// agents with.
type identity struct {
	// ca signs agents' certificates and verifies peers' with every CA
	// trusted: during a rotation the new one and the one it replaces.
	ca *pki.CA
	// own is the CA of the manager's own certificate. During a rotation
	// it is the old one: an agent that has not renewed yet trusts only
	// that one, and would refuse a manager of the new CA.
	own   *pki.CA
	pair  *pki.Keypair
	me    pki.Identity
	hosts []string
	st    store.Identities
	log   *slog.Logger

	mu   sync.Mutex
	seen store.ClusterCA // what ca and own were last loaded from
}

// caPoll is how often a manager looks for a CA rotated by another one;
// the manager that rotates looks at once.
const caPoll = 5 * time.Second

// openIdentity loads the cluster CA from the store, creating it if this is
// the first manager, and gives the manager a certificate naming it.
func openIdentity(ctx context.Context, st store.Identities, listen string, log *slog.Logger) (*identity, error) {
	now := time.Now()
	certPEM, keyPEM, err := pki.NewCA("sokovan cluster CA", now)
	if err != nil {
		return nil, err
	}
	if _, _, err = st.InitClusterCA(ctx, certPEM, keyPEM, now); err != nil {
		return nil, fmt.Errorf("manager: cluster CA: %w", err)
	}
	stored, err := st.ClusterCA(ctx)
	if err != nil {
		return nil, fmt.Errorf("manager: cluster CA: %w", err)
	}
	ca, own, err := loadCAs(stored)
	if err != nil {
		return nil, fmt.Errorf("manager: cluster CA: %w", err)
	}
	host, _ := os.Hostname()
	id := &identity{ca: ca, own: own, me: pki.Identity{Role: pki.RoleManager, ID: fmt.Sprintf("%s-%d", host, os.Getpid())},
		hosts: serverNames(host, listen), st: st, log: log, seen: stored}
	c, k, err := own.Issue(id.me, managerCertTTL, now, id.hosts...)
	if err != nil {
		return nil, err
	}
	if id.pair, err = pki.NewKeypair(c, k); err != nil {
		return nil, err
	}
	log.Info("agent identities on: agents join with join tokens and are known by their certificates",
		"ca", ca.Fingerprint(), "manager", id.me, "rotating", stored.PreviousCertPEM != nil)
	return id, nil
}

// loadCAs reads the stored CA: the one that signs agents' certificates,
// trusting the previous one beside it during a rotation, and the one the
// manager's own certificate is of.
func loadCAs(c store.ClusterCA) (signer, own *pki.CA, err error) {
	var trusted [][]byte
	if c.PreviousCertPEM != nil {
		trusted = append(trusted, c.PreviousCertPEM)
	}
	if signer, err = pki.LoadCA(c.CertPEM, c.KeyPEM, trusted...); err != nil {
		return nil, nil, err
	}
	if c.PreviousCertPEM == nil {
		return signer, signer.Snapshot(), nil
	}
	if own, err = pki.LoadCA(c.PreviousCertPEM, c.PreviousKeyPEM, c.CertPEM); err != nil {
		return nil, nil, fmt.Errorf("previous CA: %w", err)
	}
	return signer, own, nil
}

// refresh adopts a CA rotated (or a rotation finished) since the last
// look, and gives the manager a certificate of its new own CA at once:
// after a rotation finishes, agents given only the new CA refuse the old.
func (id *identity) refresh(ctx context.Context) error {
	stored, err := id.st.ClusterCA(ctx)
	if err != nil {
		return err
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if bytes.Equal(stored.CertPEM, id.seen.CertPEM) && bytes.Equal(stored.PreviousCertPEM, id.seen.PreviousCertPEM) {
		return nil
	}
	ca, own, err := loadCAs(stored)
	if err != nil {
		return err
	}
	id.ca.Set(ca)
	id.seen = stored
	id.log.Info("cluster CA changed", "ca", ca.Fingerprint(), "rotating", stored.PreviousCertPEM != nil)
	if own.Cert().Equal(id.own.Cert()) {
		return nil
	}
	id.own.Set(own)
	return id.reissue()
}

// reissue gives the manager a new certificate of its own CA.
func (id *identity) reissue() error {
	c, k, err := id.own.Issue(id.me, managerCertTTL, time.Now(), id.hosts...)
	if err == nil {
		err = id.pair.Set(c, k)
	}
	if err != nil {
		return fmt.Errorf("manager certificate: %w", err)
	}
	id.log.Info("manager certificate renewed", "expires", id.pair.Leaf().NotAfter, "ca", id.own.Fingerprint())
	return nil
}

// watch keeps the CA and the connections to agents current until ctx
// ends: a rotation made through another manager is adopted, and open
// connections to agents revoked meanwhile are closed, not used on.
func (id *identity) watch(ctx context.Context, gw *agentgw.Gateway, agents *agentrpc.AgentClient) {
	t := time.NewTicker(caPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id.changed(ctx, gw, agents, false)
	}
}

// changed looks at the store now: after this manager's own `agent rm` or
// CA rotation (now, reading the revoked certificates afresh), and on each
// watch tick.
func (id *identity) changed(ctx context.Context, gw *agentgw.Gateway, agents *agentrpc.AgentClient, now bool) {
	if now {
		gw.Forget()
	}
	if err := id.refresh(ctx); err != nil {
		id.log.Error("cluster CA not read", "err", err)
	}
	if n := agents.DropRevoked(gw.Revoked(ctx)); n > 0 {
		id.log.Info("connections to revoked agents closed", "count", n)
	}
}

// serverNames are the names agents may reach this manager by: its host
// name, the listen address's host, loopback and every interface address.
func serverNames(host, listen string) []string {
	names := []string{pki.ClusterServerName, "localhost", "127.0.0.1", "::1"}
	if host != "" {
		names = append(names, host)
	}
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		names = append(names, h)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				names = append(names, n.IP.String())
			}
		}
	}
	return names
}

// wire turns identities on in the gateway and the agent client.
func (id *identity) wire(gw *agentgw.Gateway, agents *agentrpc.AgentClient, st store.Identities, ttl time.Duration,
	allowToken bool) {
	gw.UseIdentity(agentgw.Identity{CA: id.ca, Store: st, TTL: ttl, AllowToken: allowToken})
	// Each agent is dialled expecting its own certificate, not revoked:
	// any agent's certificate would do for the chain and the role, so
	// without the id an agent answering at another's address (a stale
	// address, a hijacked one) would be handed that agent's kernels.
	agents.UseAgentTLS(func(ctx context.Context, agent domain.AgentID) *tls.Config {
		return pki.ClientConfig(id.ca, id.pair, pki.Peer{Role: pki.RoleAgent, ID: string(agent), Revoked: gw.Revoked(ctx)})
	})
}

// serverTLS serves users without a certificate and agents with one.
func (id *identity) serverTLS() *tls.Config { return pki.OptionalClientConfig(id.ca, id.pair) }

// renewals gives the manager a new certificate at 2/3 of its lifetime
// until ctx ends; connections use it from their next handshake.
func (id *identity) renewals(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(time.Until(pki.RenewAt(id.pair.Leaf())), time.Second)):
		}
		id.mu.Lock()
		err := id.reissue()
		id.mu.Unlock()
		if err != nil {
			id.log.Error("manager certificate not renewed", "err", err)
		}
	}
}
