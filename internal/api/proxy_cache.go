package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// ProxyCacheTTL is how long a manager trusts what a proxy request's token
// and deployment reference resolved to: the route table's own lifetime
// (discoveryTTL), so a revoked token, a user removed, or a deployment
// gone stops being proxied within the same bound as a route that left
// HEALTHY. Without it every proxied request costs two store reads before
// the first byte is sent.
const ProxyCacheTTL = discoveryTTL

// proxyCacheMax bounds the entries of each map; past it, expired entries
// are dropped, and if that is not enough the map starts again empty. A
// flood of distinct valid tokens then costs reads, never memory.
const proxyCacheMax = 4096

// proxyCache remembers, per token hash, the caller it authenticated and,
// per token hash and reference, the deployment the reference resolved to
// for that caller. Only successes are kept: a refusal is read again every
// time, so a token created a moment ago works at once.
type proxyCache struct {
	mu    sync.Mutex
	auths map[string]proxyAuth
	deps  map[proxyDepKey]proxyDep
}

type proxyAuth struct {
	at   time.Time
	user store.User
	// dep is set for a deployment token, which opens only that
	// deployment; user is then empty.
	dep domain.DeploymentID
}

type proxyDepKey struct{ hash, ref string }

type proxyDep struct {
	at time.Time
	d  domain.Deployment
}

// proxyHashKey carries the token's hash to the handler, which keys its
// deployment lookups by it.
type proxyHashKey struct{}

func fresh(at, now time.Time) bool { return now.Sub(at) < ProxyCacheTTL && !now.Before(at) }

// prune makes room in m for one more entry.
func prune[K comparable, V any](m map[K]V, now time.Time, at func(V) time.Time) map[K]V {
	if len(m) < proxyCacheMax {
		return m
	}
	for k, v := range m {
		if !fresh(at(v), now) {
			delete(m, k)
		}
	}
	if len(m) >= proxyCacheMax {
		return map[K]V{}
	}
	return m
}

// authorizeProxy authenticates a request to a deployment's proxy: a
// user's token (the handler checks the deployment is theirs) or one of
// the deployment's own tokens.
func (s *Server) authorizeProxy(w http.ResponseWriter, r *http.Request, token string, next http.Handler) {
	hash := HashToken(token)
	key := string(hash)
	now := s.clock.Now()
	c := &s.proxyCache
	c.mu.Lock()
	a, ok := c.auths[key]
	c.mu.Unlock()
	if !ok || !fresh(a.at, now) {
		var err error
		a, err = s.lookupProxyCaller(r.Context(), hash)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				err = unauthenticated("invalid token")
			}
			s.fail(w, r, err)
			return
		}
		a.at = now
		c.mu.Lock()
		if c.auths == nil {
			c.auths = map[string]proxyAuth{}
		}
		c.auths = prune(c.auths, now, func(v proxyAuth) time.Time { return v.at })
		c.auths[key] = a
		c.mu.Unlock()
	}
	if a.dep == "" {
		// Judged on every request, cached or not: a token that expires
		// is refused from that moment, not a cache lifetime later.
		if err := s.tokenExpired(a.user); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	ctx := context.WithValue(r.Context(), proxyHashKey{}, key)
	if a.dep != "" {
		ctx = context.WithValue(ctx, deployTokenKey{}, a.dep)
	} else {
		ctx = context.WithValue(ctx, ctxKey{}, a.user)
	}
	next.ServeHTTP(w, r.WithContext(ctx))
}

func (s *Server) lookupProxyCaller(ctx context.Context, hash []byte) (proxyAuth, error) {
	u, err := s.store.UserByTokenHash(ctx, hash)
	if err == nil {
		return proxyAuth{user: u}, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return proxyAuth{}, err
	}
	dep, err := s.store.DeploymentByTokenHash(ctx, hash)
	if err != nil {
		return proxyAuth{}, err
	}
	return proxyAuth{dep: dep}, nil
}

// cachedProxyDeployment is proxyDeployment, remembered for the caller's
// token for ProxyCacheTTL.
func (s *Server) cachedProxyDeployment(ctx context.Context, ref string) (domain.Deployment, error) {
	hash, _ := ctx.Value(proxyHashKey{}).(string)
	key := proxyDepKey{hash: hash, ref: ref}
	now := s.clock.Now()
	c := &s.proxyCache
	c.mu.Lock()
	e, ok := c.deps[key]
	c.mu.Unlock()
	if ok && fresh(e.at, now) {
		return e.d, nil
	}
	d, err := s.proxyDeployment(ctx, ref)
	if err != nil || hash == "" {
		return d, err
	}
	c.mu.Lock()
	if c.deps == nil {
		c.deps = map[proxyDepKey]proxyDep{}
	}
	c.deps = prune(c.deps, now, func(v proxyDep) time.Time { return v.at })
	c.deps[key] = proxyDep{at: now, d: d}
	c.mu.Unlock()
	return d, nil
}
