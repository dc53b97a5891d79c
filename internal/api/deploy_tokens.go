package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// DeploymentTokenPrefix starts every deployment token, so one found in a
// log reads as a credential, and as a narrower one than a user's.
const DeploymentTokenPrefix = "skvd_"

// deployTokenKey carries, on a request authorised by a deployment token,
// the deployment it opens.
type deployTokenKey struct{}

func tokenDeployment(ctx context.Context) (domain.DeploymentID, bool) {
	id, ok := ctx.Value(deployTokenKey{}).(domain.DeploymentID)
	return id, ok
}

func (s *Server) deployTokenRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/deployments/{id}/tokens", access: user, summary: "Create a token that opens the deployment's proxy",
			desc: "The token is shown once, in this answer; only its hash is stored. It opens /v1/deployments/{id}/proxy/… " +
				"of this deployment only (give the deployment's id or name there), until it is revoked.",
			status: http.StatusCreated, resp: v1.DeploymentToken{}, handle: s.createDeployToken},
		{method: "GET", path: "/v1/deployments/{id}/tokens", access: user, summary: "The deployment's tokens, revoked ones too",
			status: http.StatusOK, resp: v1.List[v1.DeploymentToken]{}, handle: s.listDeployTokens},
		{method: "DELETE", path: "/v1/deployments/{id}/tokens/{token}", access: user, summary: "Revoke a deployment token",
			desc:   "{token} is the token's id. 409 when it is revoked already.",
			status: http.StatusOK, resp: v1.DeploymentToken{}, handle: s.revokeDeployToken},
	}
}

func tokenOut(t store.DeploymentToken) v1.DeploymentToken {
	out := v1.DeploymentToken{ID: t.ID, Deployment: string(t.Deployment), CreatedAt: t.CreatedAt.UTC()}
	if !t.RevokedAt.IsZero() {
		at := t.RevokedAt.UTC()
		out.RevokedAt = &at
	}
	return out
}

func (s *Server) createDeployToken(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := s.resolveDeployment(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	if d.Status.Terminal() {
		return conflict("deployment %s is %s", d.Name, d.Status)
	}
	token := DeploymentTokenPrefix + strings.TrimPrefix(NewToken(), TokenPrefix)
	t := store.DeploymentToken{ID: newUUID(), Deployment: d.ID, CreatedAt: s.clock.Now().UTC().Truncate(time.Microsecond)}
	if err := s.store.CreateDeploymentToken(ctx, t, HashToken(token)); err != nil {
		return err
	}
	out := tokenOut(t)
	out.Token = token
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listDeployTokens(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := s.resolveDeployment(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	ts, err := s.store.DeploymentTokens(ctx, d.ID)
	if err != nil {
		return err
	}
	return writeList(w, ts, tokenOut)
}

func (s *Server) revokeDeployToken(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := s.resolveDeployment(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	id := r.PathValue("token")
	err = s.store.RevokeDeploymentToken(ctx, d.ID, id, s.clock.Now().UTC().Truncate(time.Microsecond))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("deployment %s has no token %q", d.Name, id)
	case errors.Is(err, store.ErrGuardFailed):
		return conflict("token %s is revoked already", id)
	case err != nil:
		return err
	}
	ts, err := s.store.DeploymentTokens(ctx, d.ID)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.ID == id {
			writeJSON(w, http.StatusOK, tokenOut(t))
			return nil
		}
	}
	return notFound("deployment %s has no token %q", d.Name, id)
}

// proxyDeployment is the deployment a proxy request names, for the
// caller: a deployment token opens only its own deployment (by id, name
// or id prefix), anything else is 404 as a missing one is.
func (s *Server) proxyDeployment(ctx context.Context, ref string) (domain.Deployment, error) {
	id, ok := tokenDeployment(ctx)
	if !ok {
		return s.resolveDeployment(ctx, ref)
	}
	d, err := s.store.GetDeployment(ctx, id)
	if err != nil {
		return d, err
	}
	if ref == string(d.ID) || ref == d.Name || (len(ref) >= minPrefix && strings.HasPrefix(string(d.ID), ref)) {
		return d, nil
	}
	return domain.Deployment{}, notFound("no deployment %q", ref)
}
