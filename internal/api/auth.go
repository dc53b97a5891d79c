package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store"
)

// TokenPrefix starts every user token, so a token found in a log or a
// repository is recognisable (and scannable) as a Sokovan credential.
const TokenPrefix = "skv_"

// maxTokenLen bounds what is hashed and looked up.
const maxTokenLen = 512

// NewToken returns a fresh user token: 32 random bytes, base64url without
// padding, after TokenPrefix.
func NewToken() string { return pki.NewSecret(TokenPrefix) }

// HashToken is how a token is stored: its SHA-256. A token carries 256
// random bits, so a fast unsalted hash is enough; a copy of the users table
// grants nothing.
func HashToken(token string) []byte { return pki.HashSecret(token) }

// Users is what EnsureAdmin needs from the store.
type Users interface {
	CreateUser(ctx context.Context, u store.User, tokenHash []byte) error
	UserByTokenHash(ctx context.Context, tokenHash []byte) (store.User, error)
}

// AdminName is the user EnsureAdmin creates.
const AdminName = "admin"

// ErrAdminToken is returned by EnsureAdmin when the token cannot be made
// the admin's: the admin exists with another token, or the token is
// another user's.
var ErrAdminToken = errors.New("admin token mismatch")

// EnsureAdmin bootstraps the first administrator: when no user holds the
// token, it creates user "admin" (role admin, project and domain
// "default") with it. A token that already belongs to an admin is fine,
// so a restart with the same token changes nothing. If user "admin"
// already exists with another token, it fails with ErrAdminToken rather
// than adding a second way in.
// MinAdminTokenLen keeps a guessable word from being the key to the whole
// cluster; generated tokens are far longer.
const MinAdminTokenLen = 16

func EnsureAdmin(ctx context.Context, st Users, token string) error {
	if len(token) < MinAdminTokenLen || len(token) > maxTokenLen || strings.ContainsAny(token, " \t\r\n") {
		return fmt.Errorf("ensure admin: the token must be %d to %d characters without spaces", MinAdminTokenLen, maxTokenLen)
	}
	hash := HashToken(token)
	u, err := st.UserByTokenHash(ctx, hash)
	switch {
	case err == nil && u.Role == store.RoleAdmin:
		return nil
	case err == nil:
		return fmt.Errorf("ensure admin: %w: the token belongs to user %q, who is not an admin", ErrAdminToken, u.Name)
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("ensure admin: %w", err)
	}
	admin := store.User{ID: newUUID(), Name: AdminName, Role: store.RoleAdmin, Project: "default", Domain: "default",
		CreatedAt: time.Now().UTC()}
	if err := st.CreateUser(ctx, admin, hash); err != nil {
		if errors.Is(err, store.ErrConflict) {
			// Managers started together on a new database race to create
			// the admin: the one that lost finds it made with its token.
			if u, err := st.UserByTokenHash(ctx, hash); err == nil && u.Role == store.RoleAdmin {
				return nil
			}
			return fmt.Errorf("ensure admin: %w: user %q exists with another token", ErrAdminToken, AdminName)
		}
		return fmt.Errorf("ensure admin: %w", err)
	}
	return nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// access says who may call a route.
type access int

const (
	public access = iota // no token: health, metrics, the OpenAPI document
	user                 // any user token
	admin                // a token of a user with role admin
	agent                // the agent token only
	// deployment: a user token (the handler checks ownership) or one of
	// the deployment's own tokens, which open its proxy and nothing else.
	deployment
)

func (a access) String() string {
	return [...]string{"public", "user", "admin", "agent", "deployment"}[a]
}

type ctxKey struct{}

// caller returns the authenticated user of a user or admin route.
func caller(ctx context.Context) store.User {
	u, _ := ctx.Value(ctxKey{}).(store.User)
	return u
}

func isAdmin(u store.User) bool { return u.Role == store.RoleAdmin }

// bearer extracts the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != "" && len(token) <= maxTokenLen
}

// tokenExpired refuses the token u was found by once it has expired,
// saying so and how to get another, so the caller does not take it for a
// mistyped one. nil for a token that is still good or never expires.
func (s *Server) tokenExpired(u store.User) error {
	if u.TokenExpiresAt.IsZero() || s.clock.Now().Before(u.TokenExpiresAt) {
		return nil
	}
	return unauthenticated("token expired at %s: get a new one with `sokovan user token` (or ask an admin: `sokovan user token %s`)",
		u.TokenExpiresAt.UTC().Format(time.RFC3339), u.Name)
}

// isAgentToken compares in constant time. Both sides are hashed first so
// that not even the token's length leaks through timing.
func (s *Server) isAgentToken(token string) bool {
	if s.agentTokenHash == nil {
		return false
	}
	return subtle.ConstantTimeCompare(HashToken(token), s.agentTokenHash) == 1
}

// agentCredential reports whether an agent call brings a credential
// other than the agent token: a client certificate, or a join token in
// the body of a join.
func agentCredential(r *http.Request) bool {
	return (r.TLS != nil && len(r.TLS.PeerCertificates) > 0) || r.URL.Path == "/v1/agent/join"
}

// authorize wraps a route's handler with its access rule:
//
//   - no or malformed token: 401;
//   - agent routes take the agent token only; a user's token there is 403,
//     anything else 401;
//   - user routes refuse the agent token (401: it is not a user's), look
//     the token up (unknown: 401), and admin routes answer 403 to users.
func (s *Server) authorize(level access, next http.Handler) http.Handler {
	if level == public {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if level == agent && r.Header.Get("Authorization") == "" && agentCredential(r) {
			// The gateway authenticates these itself.
			next.ServeHTTP(w, r)
			return
		}
		token, ok := bearer(r)
		if !ok {
			s.fail(w, r, unauthenticated("missing or malformed bearer token"))
			return
		}
		if level == agent {
			if s.isAgentToken(token) {
				next.ServeHTTP(w, r)
				return
			}
			if _, err := s.store.UserByTokenHash(r.Context(), HashToken(token)); err == nil {
				s.fail(w, r, forbidden("agent routes take the agent token, not a user's"))
				return
			}
			s.fail(w, r, unauthenticated("invalid agent token"))
			return
		}
		if s.isAgentToken(token) {
			s.fail(w, r, unauthenticated("the agent token is not a user's token"))
			return
		}
		if level == deployment {
			s.authorizeProxy(w, r, token, next)
			return
		}
		u, err := s.store.UserByTokenHash(r.Context(), HashToken(token))
		if err == nil {
			err = s.tokenExpired(u)
		}
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				err = unauthenticated("invalid token")
			}
			s.fail(w, r, err)
			return
		}
		if level == admin && !isAdmin(u) {
			s.fail(w, r, forbidden("only an admin may do this"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, u)))
	})
}
