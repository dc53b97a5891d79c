package api

import (
	"net/http"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Bounds of a join token's lifetime: a token is for joining agents being
// set up now, not a standing credential.
const (
	defaultJoinTTL = time.Hour
	maxJoinTTL     = 30 * 24 * time.Hour
)

func (s *Server) agentTokenRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/agent-tokens", access: admin, summary: "Create a join token for agents",
			desc: "An agent joins the cluster with it once (sokovan agent run --join-token): it sends a certificate " +
				"request and receives a certificate of the cluster CA naming its id. The token is shown once, in this " +
				"answer; only its hash is stored. It expires after ttl and, with uses, after that many joins. ca is the cluster " +
				"CA's certificate when agents have identities: the agent trusts the managers with it (--ca).",
			body: v1.CreateAgentTokenRequest{}, status: http.StatusCreated, resp: v1.AgentToken{}, handle: s.createAgentToken},
	}
}

func (s *Server) createAgentToken(w http.ResponseWriter, r *http.Request) error {
	var req v1.CreateAgentTokenRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	ttl, aerr := parseDuration("ttl", req.TTL, defaultJoinTTL)
	if aerr != nil {
		return aerr
	}
	if ttl <= 0 || ttl > maxJoinTTL {
		return invalid("ttl", "must be above 0 and at most %s, not %s", maxJoinTTL, ttl)
	}
	if req.Uses < 0 {
		return invalid("uses", "must be 0 (any number) or more, not %d", req.Uses)
	}
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	t := store.JoinToken{ID: newUUID(), CreatedAt: now, ExpiresAt: now.Add(ttl), Uses: req.Uses}
	token := pki.NewJoinToken()
	if err := s.store.CreateJoinToken(r.Context(), t, pki.HashJoinToken(token)); err != nil {
		return err
	}
	out := v1.AgentToken{ID: t.ID, Token: token, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, Uses: t.Uses}
	if s.clusterCA != nil {
		// Every CA trusted now, read from the store: during a rotation an
		// agent joining must trust managers of either.
		ca, err := s.clusterCAState(r)
		if err != nil {
			return err
		}
		out.CA = ca.Certificates
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}
