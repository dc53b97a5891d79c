package agentgw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Identity turns on agents' identities: agents join with a bootstrap
// token for a certificate the cluster CA signs, and from then on their id
// is the one their client certificate names, never what a body says.
type Identity struct {
	CA    *pki.CA
	Store store.Identities
	// TTL is an agent certificate's lifetime; agents renew at 2/3 of it.
	TTL time.Duration
	// AllowToken keeps the shared agent token working for agents without
	// a certificate. It is the insecure dev mode: anyone holding the token
	// can speak for any agent.
	AllowToken bool
}

// DefaultCertTTL is an agent certificate's lifetime unless configured.
const DefaultCertTTL = 7 * 24 * time.Hour

// revokedTTL bounds how stale the gateway's copy of the revoked serials
// may be: an `agent rm` takes effect on every manager within it.
const revokedTTL = 5 * time.Second

// UseIdentity turns on agents' identities.
func (g *Gateway) UseIdentity(id Identity) {
	if id.TTL <= 0 {
		id.TTL = DefaultCertTTL
	}
	g.identity = &id
	g.revoked = &revokedCache{}
	g.mux.HandleFunc("POST /v1/agent/join", g.join)
	g.mux.HandleFunc("POST /v1/agent/renew", g.renew)
}

type callerKey struct{}

// authenticate admits a call by its client certificate, or by the shared
// token where that is allowed, and says who the caller is (the zero
// identity for a token holder).
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if g.identity == nil {
		if !agentrpc.Authorized(r, g.token) {
			agentrpc.WriteError(w, http.StatusUnauthorized, errors.New("agent token required"))
			return r, false
		}
		return r, true
	}
	if r.URL.Path == "/v1/agent/join" {
		return r, true // the join token in the body is the credential
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		id, err := g.identity.CA.Verify(r.TLS.PeerCertificates[0], g.now(), g.revoked.check(r.Context(), g))
		if err == nil && id.Role != pki.RoleAgent {
			err = fmt.Errorf("certificate names %s, not an agent", id)
		}
		if err != nil {
			agentrpc.WriteError(w, http.StatusUnauthorized, fmt.Errorf("client certificate: %w", err))
			return r, false
		}
		return r.WithContext(context.WithValue(r.Context(), callerKey{}, id)), true
	}
	if g.identity.AllowToken && agentrpc.Authorized(r, g.token) {
		return r, true
	}
	agentrpc.WriteError(w, http.StatusUnauthorized, errors.New("an agent client certificate is required (join the cluster with a join token)"))
	return r, false
}

// sameAgent refuses (403) a call whose body speaks for another agent than
// the certificate's: this is what stops one agent, or anyone holding a
// credential, from registering as another and ending its sessions.
func sameAgent(w http.ResponseWriter, r *http.Request, body domain.AgentID) bool {
	id, ok := r.Context().Value(callerKey{}).(pki.Identity)
	if !ok || domain.AgentID(id.ID) == body {
		return true
	}
	agentrpc.WriteError(w, http.StatusForbidden, fmt.Errorf("the client certificate names %s; it cannot speak for agent %s", id, body))
	return false
}

func (g *Gateway) join(w http.ResponseWriter, r *http.Request) {
	var in agentrpc.Join
	if !agentrpc.ReadJSON(w, r, &in) {
		return
	}
	if in.Token == "" || in.ID == "" || in.CSR == "" {
		agentrpc.WriteError(w, http.StatusBadRequest, errors.New("token, id and csr are required"))
		return
	}
	g.issue(w, r, in.ID, in.CSR, func(ctx context.Context, c store.AgentCertificate) error {
		return g.identity.Store.JoinAgent(ctx, pki.HashJoinToken(in.Token), c, g.now())
	})
}

func (g *Gateway) renew(w http.ResponseWriter, r *http.Request) {
	var in agentrpc.Renew
	if !agentrpc.ReadJSON(w, r, &in) {
		return
	}
	id, ok := r.Context().Value(callerKey{}).(pki.Identity)
	if !ok {
		agentrpc.WriteError(w, http.StatusUnauthorized, errors.New("renewal needs the client certificate being renewed"))
		return
	}
	old := pki.Serial(r.TLS.PeerCertificates[0])
	g.issue(w, r, domain.AgentID(id.ID), in.CSR, func(ctx context.Context, c store.AgentCertificate) error {
		return g.identity.Store.RenewAgentCertificate(ctx, old, c, g.now())
	})
}

// issue signs a certificate naming agent and hands it out once record has
// stored it: a certificate the store refused is never seen.
func (g *Gateway) issue(w http.ResponseWriter, r *http.Request, agent domain.AgentID, csr string,
	record func(context.Context, store.AgentCertificate) error) {
	now := g.now()
	// One view of the CA for the whole issue: a rotation adopted meanwhile
	// must not record one issuer for a certificate of the other.
	ca := g.identity.CA.Snapshot()
	issuer := ca.Cert()
	certPEM, err := ca.Sign([]byte(csr), pki.Identity{Role: pki.RoleAgent, ID: string(agent)}, g.identity.TTL, now)
	if err != nil {
		agentrpc.WriteError(w, http.StatusBadRequest, fmt.Errorf("csr: %w", err))
		return
	}
	cert, err := pki.ParseCert(certPEM)
	if err != nil {
		g.fail(w, "join", err)
		return
	}
	err = record(r.Context(), store.AgentCertificate{Serial: pki.Serial(cert), Agent: agent, NotAfter: cert.NotAfter,
		Issuer: pki.Fingerprint(issuer)})
	switch {
	case errors.Is(err, store.ErrUnknownJoinToken):
		agentrpc.WriteError(w, http.StatusUnauthorized, errors.New("token: no such join token"))
		return
	case errors.Is(err, store.ErrJoinTokenSpent):
		agentrpc.WriteError(w, http.StatusUnauthorized, errors.New("token: the join token expired or was used up"))
		return
	case errors.Is(err, store.ErrIdentityTaken):
		agentrpc.WriteError(w, http.StatusConflict, fmt.Errorf("id %s: %w", agent, err))
		return
	case err != nil:
		g.fail(w, "join", err)
		return
	}
	g.log.Info("agent certificate issued", "agent", agent, "serial", pki.Serial(cert), "not_after", cert.NotAfter)
	agentrpc.WriteJSON(w, http.StatusOK, agentrpc.Certificate{Certificate: string(certPEM), CA: string(ca.Bundle())})
}

// revokedCache is the gateway's copy of the revoked serials. Its lock
// guards the copy only: the store is read outside it, so one slow read
// holds up no verification that has a fresh copy, nor Forget.
type revokedCache struct {
	mu      sync.Mutex
	at      time.Time
	serials map[string]bool
	// gen counts Forgets: a read begun before one may predate the
	// revocation it announces, so it is used once and not kept.
	gen uint64
	// loading is closed when the read in flight ends; nil when none is.
	loading chan struct{}
}

// Revoked is the revocation test for one verification made under ctx
// (see revokedCache.check): a manager dialling an agent refuses a revoked
// certificate as the gateway does.
func (g *Gateway) Revoked(ctx context.Context) func(serial string) bool {
	if g.revoked == nil {
		return nil
	}
	return g.revoked.check(ctx, g)
}

// check returns the revocation test for one verification, reading the
// serials afresh when the copy is older than revokedTTL; callers that
// find a read in flight wait for it rather than start their own. A store
// that cannot answer refuses every certificate rather than admit a
// revoked one.
func (c *revokedCache) check(ctx context.Context, g *Gateway) func(string) bool {
	refuse := func(string) bool { return true }
	for {
		now := g.now()
		c.mu.Lock()
		if c.serials != nil && now.Sub(c.at) < revokedTTL && !now.Before(c.at) {
			serials := c.serials
			c.mu.Unlock()
			return func(s string) bool { return serials[s] }
		}
		if wait := c.loading; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return refuse
			}
		}
		done, gen := make(chan struct{}), c.gen
		c.loading = done
		c.mu.Unlock()

		list, err := g.identity.Store.RevokedCertificates(ctx, now)
		serials := make(map[string]bool, len(list))
		for _, s := range list {
			serials[s] = true
		}
		c.mu.Lock()
		c.loading = nil
		if err == nil && gen == c.gen {
			c.serials, c.at = serials, now
		}
		c.mu.Unlock()
		close(done)
		if err != nil {
			g.log.Warn("revoked certificates not read; refusing certificates", "err", err)
			return refuse
		}
		return func(s string) bool { return serials[s] }
	}
}

// Forget makes the next verification read the revoked serials afresh:
// the manager that revoked them need not wait for revokedTTL.
func (g *Gateway) Forget() {
	if g.revoked != nil {
		g.revoked.mu.Lock()
		g.revoked.serials = nil
		g.revoked.gen++
		g.revoked.mu.Unlock()
	}
}

// stale reports whether the caller's certificate is of a CA that is being
// rotated out: the heartbeat's answer then asks the agent to renew now,
// not at 2/3 of its lifetime, so the rotation can finish.
func (g *Gateway) stale(r *http.Request) bool {
	if g.identity == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return false
	}
	return !g.identity.CA.Issued(r.TLS.PeerCertificates[0])
}
