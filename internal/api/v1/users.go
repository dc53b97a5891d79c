package v1

import "time"

// CreateUserRequest is the body of POST /v1/users.
type CreateUserRequest struct {
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty" enum:"admin,user"`
	// Project and Domain default to "default".
	Project string `json:"project,omitempty"`
	Domain  string `json:"domain,omitempty"`
}

// User is a user as the API shows it: never its token.
type User struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Project   string    `json:"project"`
	Domain    string    `json:"domain"`
	CreatedAt time.Time `json:"created_at"`
}

// NewUser is the one answer that carries a token: only its hash is
// stored, so it cannot be shown again.
type NewUser struct {
	User
	Token string `json:"token"`
	// ExpiresAt is when Token stops working; absent: never.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// TokenRequest is the optional body of POST /v1/me/token and
// /v1/users/{name}/token.
type TokenRequest struct {
	// TTL is how long the new token works, as "720h"; absent: it never
	// expires.
	TTL string `json:"ttl,omitempty"`
}

// PolicyRequest is the body of PUT /v1/policies/{scope}/{name}; it
// replaces the policy whole.
type PolicyRequest struct {
	// MaxSlots limits what the scope holds at once, slot name to
	// quantity; slots left out are unlimited.
	MaxSlots map[string]string `json:"max_slots,omitempty"`
	// MaxConcurrentSessions caps sessions holding resources at once,
	// MaxPendingSessions PENDING ones (more are refused at submit); 0 is
	// no limit.
	MaxConcurrentSessions int `json:"max_concurrent_sessions,omitempty"`
	MaxPendingSessions    int `json:"max_pending_sessions,omitempty"`
}

// Policy is the resource policy of a user, project or domain.
type Policy struct {
	// Scope is user, project or domain; Name is the user's name, or the
	// project's or domain's.
	Scope                 string            `json:"scope"`
	Name                  string            `json:"name"`
	MaxSlots              map[string]string `json:"max_slots"`
	MaxConcurrentSessions int               `json:"max_concurrent_sessions"`
	MaxPendingSessions    int               `json:"max_pending_sessions"`
}

// CreateAgentTokenRequest is the body of POST /v1/agent-tokens.
type CreateAgentTokenRequest struct {
	// TTL is how long the token lets agents join, as "1h" (default 1h, at
	// most 720h).
	TTL string `json:"ttl,omitempty"`
	// Uses caps how many agents may join with it; 0 or absent: any number
	// until it expires.
	Uses int `json:"uses,omitempty"`
}

// AgentToken is a join token; Token is shown once, when it is created.
type AgentToken struct {
	ID        string    `json:"id"`
	Token     string    `json:"token,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Uses      int       `json:"uses,omitempty"`
	// CA is the cluster CA's certificate (PEM), which agents trust the
	// managers with; empty where agents have no identities.
	CA string `json:"ca,omitempty"`
}

// ClusterCA is the state of the cluster CA (GET /v1/cluster-ca, and the
// answer of a rotation's start and finish).
type ClusterCA struct {
	// Fingerprint is the SHA-256 of the CA agents' certificates are
	// issued by.
	Fingerprint string `json:"fingerprint"`
	// Rotating is true between `ca rotate` and `ca rotate --finish`;
	// Previous is then the fingerprint of the CA being replaced.
	Rotating bool   `json:"rotating"`
	Previous string `json:"previous,omitempty"`
	// Certificates holds every CA trusted now (PEM), the current one
	// first: what users' and agents' --ca files should hold.
	Certificates string `json:"certificates"`
	// StaleAgents, during a rotation, are the agents still holding only
	// certificates of the previous CA: finishing waits for them.
	StaleAgents []string `json:"stale_agents,omitempty"`
}
