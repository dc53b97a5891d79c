package agentrpc

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
)

// UseTLS makes the client call managers over TLS with cfg, which presents
// the agent's certificate. Set it before the first call.
func (m *ManagerClient) UseTLS(cfg *tls.Config) {
	m.hc.Transport = tlsTransport(cfg)
}

// UseTLS makes the client call agents over TLS with cfg, which presents
// the manager's certificate. Set it before the first call.
func (c *AgentClient) UseTLS(cfg *tls.Config) {
	c.hc.Transport = tlsTransport(cfg)
}

// UseAgentTLS makes the client call each agent over TLS with the
// configuration cfg makes for it, one per connection: one that checks the
// certificate names that very agent. Each agent gets its own connections,
// so a connection made to one agent is never reused for another that
// came to register the same address. Set it before the first call.
func (c *AgentClient) UseAgentTLS(cfg func(ctx context.Context, agent domain.AgentID) *tls.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.perAgent = cfg
	c.clients = map[domain.AgentID]*http.Client{}
}

// client is the HTTP client that calls agent.
func (c *AgentClient) client(agent domain.AgentID) *http.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.perAgent == nil {
		return c.hc
	}
	if hc, ok := c.clients[agent]; ok {
		return hc
	}
	cfg := c.perAgent
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn := tls.Client(raw, cfg(ctx, agent))
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return c.track(conn), nil
	}
	hc := &http.Client{Timeout: c.hc.Timeout, Transport: t}
	c.clients[agent] = hc
	return hc
}

// trackedConn is a connection to an agent that DropRevoked can find: it
// leaves the client's set when closed, by whoever closes it.
type trackedConn struct {
	*tls.Conn
	c    *AgentClient
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.untrack()
	return t.Conn.Close()
}

func (t *trackedConn) untrack() {
	t.once.Do(func() {
		t.c.mu.Lock()
		delete(t.c.conns, t)
		t.c.mu.Unlock()
	})
}

// drop closes the connection under the TLS layer: a revoked peer is owed
// no close_notify, and writing one to a hung peer waits up to its write
// deadline, which would hold up every other drop behind it.
func (t *trackedConn) drop() {
	t.untrack()
	_ = t.Conn.NetConn().Close()
}

func (c *AgentClient) track(conn *tls.Conn) net.Conn {
	t := &trackedConn{Conn: conn, c: c}
	c.mu.Lock()
	if c.conns == nil {
		c.conns = map[*trackedConn]struct{}{}
	}
	c.conns[t] = struct{}{}
	c.mu.Unlock()
	return t
}

// DropRevoked closes every open connection to an agent whose certificate
// revoked holds, idle or in a call, and says how many: a revocation
// would otherwise reach a connection only when it is made, and a pooled
// one lives on as long as it is used.
func (c *AgentClient) DropRevoked(revoked func(serial string) bool) int {
	if revoked == nil {
		return 0
	}
	var drop []*trackedConn
	c.mu.Lock()
	for t := range c.conns {
		if peers := t.ConnectionState().PeerCertificates; len(peers) > 0 && revoked(pki.Serial(peers[0])) {
			drop = append(drop, t)
		}
	}
	c.mu.Unlock()
	for _, t := range drop {
		t.drop()
	}
	return len(drop)
}

func tlsTransport(cfg *tls.Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	return t
}

// Join asks a manager for the agent's first certificate with a join token.
func (m *ManagerClient) Join(ctx context.Context, in Join) (Certificate, error) {
	var out Certificate
	err := m.post(ctx, "/v1/agent/join", in, &out)
	return out, err
}

// Renew asks a manager for a new certificate, authenticated by the one
// the client presents now.
func (m *ManagerClient) Renew(ctx context.Context, in Renew) (Certificate, error) {
	var out Certificate
	err := m.post(ctx, "/v1/agent/renew", in, &out)
	return out, err
}

// CloseIdle closes the connections kept open to managers, so the next
// call makes a new handshake: after a renewal, one that presents the new
// certificate. (The gateway checks the certificate of every call, so a
// connection kept from before would go on presenting the old one until it
// expired.)
func (m *ManagerClient) CloseIdle() { m.hc.CloseIdleConnections() }
