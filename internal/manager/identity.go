package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
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
	ca    *pki.CA
	pair  *pki.Keypair
	me    pki.Identity
	hosts []string
	log   *slog.Logger
}

// openIdentity loads the cluster CA from the store, creating it if this is
// the first manager, and gives the manager a certificate naming it.
func openIdentity(ctx context.Context, st store.Identities, listen string, log *slog.Logger) (*identity, error) {
	now := time.Now()
	certPEM, keyPEM, err := pki.NewCA("sokovan cluster CA", now)
	if err != nil {
		return nil, err
	}
	if certPEM, keyPEM, err = st.InitClusterCA(ctx, certPEM, keyPEM, now); err != nil {
		return nil, fmt.Errorf("manager: cluster CA: %w", err)
	}
	ca, err := pki.LoadCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("manager: cluster CA: %w", err)
	}
	host, _ := os.Hostname()
	id := &identity{ca: ca, me: pki.Identity{Role: pki.RoleManager, ID: fmt.Sprintf("%s-%d", host, os.Getpid())},
		hosts: serverNames(host, listen), log: log}
	c, k, err := ca.Issue(id.me, managerCertTTL, now, id.hosts...)
	if err != nil {
		return nil, err
	}
	if id.pair, err = pki.NewKeypair(c, k); err != nil {
		return nil, err
	}
	log.Info("agent identities on: agents join with join tokens and are known by their certificates",
		"ca", pki.Fingerprint(ca.Cert), "manager", id.me)
	return id, nil
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
		c, k, err := id.ca.Issue(id.me, managerCertTTL, time.Now(), id.hosts...)
		if err == nil {
			err = id.pair.Set(c, k)
		}
		if err != nil {
			id.log.Error("manager certificate not renewed", "err", err)
			continue
		}
		id.log.Info("manager certificate renewed", "expires", id.pair.Leaf().NotAfter)
	}
}
