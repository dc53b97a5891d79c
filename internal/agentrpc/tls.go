package agentrpc

import (
	"context"
	"crypto/tls"
	"net/http"
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
