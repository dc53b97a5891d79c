package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Identities keeps what agents' identities rest on: the cluster CA, the
// bootstrap tokens agents join with, and the certificates issued to them.
// Each method is one transaction.
type Identities interface {
	// InitClusterCA stores the CA unless one is stored already, and
	// returns the stored one: of managers starting together the first to
	// commit wins, and the others adopt its CA.
	InitClusterCA(ctx context.Context, certPEM, keyPEM []byte, at time.Time) (cert, key []byte, err error)
	// CreateJoinToken stores a token by the hash of its secret.
	CreateJoinToken(ctx context.Context, t JoinToken, hash []byte) error
	// JoinAgent spends one use of the join token whose secret hashes to
	// hash and records c, all or nothing: ErrUnknownJoinToken,
	// ErrJoinTokenSpent (expired at now or used up), or ErrIdentityTaken
	// when c's agent holds a certificate neither revoked nor expired at
	// now, whose holder alone may renew it.
	JoinAgent(ctx context.Context, hash []byte, c AgentCertificate, now time.Time) error
	// RenewAgentCertificate records c for the holder of the live
	// certificate old, which must name the same agent (ErrIdentityTaken
	// otherwise, and when old is revoked or expired at now).
	RenewAgentCertificate(ctx context.Context, old string, c AgentCertificate, now time.Time) error
	// RevokeAgentCertificates revokes every certificate of the agent at
	// at and returns how many it revoked.
	RevokeAgentCertificates(ctx context.Context, agent domain.AgentID, at time.Time) (int, error)
	// RevokedCertificates lists the serials of revoked certificates not
	// yet expired at now: those a verifier must still refuse.
	RevokedCertificates(ctx context.Context, now time.Time) ([]string, error)
	// ClusterCA reads the stored CA, and the one being replaced while a
	// rotation runs.
	ClusterCA(ctx context.Context) (ClusterCA, error)
	// RotateClusterCA makes next the CA agents' certificates are issued
	// by and keeps the current one beside it as Previous; certificates
	// recorded with no issuer are the current CA's, named oldIssuer.
	// ErrCARotating while a rotation runs already.
	RotateClusterCA(ctx context.Context, next ClusterCA, oldIssuer string, at time.Time) error
	// StaleAgents lists the agents whose live certificates (neither
	// revoked nor expired at now) are all of another CA than issuer:
	// those that have not renewed since a rotation.
	StaleAgents(ctx context.Context, issuer string, now time.Time) ([]domain.AgentID, error)
	// FinishCARotation drops the previous CA, unless a live agent still
	// holds only certificates of another CA than issuer
	// (*CARotationPending naming them) or no rotation runs
	// (ErrNoCARotation).
	FinishCARotation(ctx context.Context, issuer string, now time.Time) error
}

// ClusterCA is the stored cluster CA: its certificate and key (PEM), and
// while a rotation runs the CA being replaced.
type ClusterCA struct {
	CertPEM, KeyPEM                 []byte
	PreviousCertPEM, PreviousKeyPEM []byte
}

// CARotationPending refuses to finish a rotation: the agents named hold
// certificates of the old CA only, and would be cut off.
type CARotationPending struct {
	Agents []domain.AgentID
}

func (e *CARotationPending) Error() string {
	return fmt.Sprintf("agents %v still hold certificates of the old CA only: wait for them to renew "+
		"(a running agent does within a heartbeat), or remove them (agent rm)", e.Agents)
}

// Unwrap makes it a conflict.
func (e *CARotationPending) Unwrap() error { return ErrConflict }

// JoinToken is a bootstrap credential an agent joins the cluster with.
type JoinToken struct {
	ID        string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Uses is how many joins it allows; 0 is any number until it expires.
	Uses int
}

// AgentCertificate is a certificate issued to an agent.
type AgentCertificate struct {
	Serial   string
	Agent    domain.AgentID
	NotAfter time.Time
	// Issuer is the fingerprint of the CA that issued it.
	Issuer string
}

// Why a join or renewal is refused.
var (
	ErrUnknownJoinToken = fmt.Errorf("%w: no such join token", ErrNotFound)
	ErrJoinTokenSpent   = fmt.Errorf("%w: the join token expired or was used up", ErrGuardFailed)
	ErrIdentityTaken    = fmt.Errorf("%w: the agent id holds a live certificate; "+
		"renew with it, or revoke it (agent rm) before joining again", ErrConflict)
	ErrCARotating   = fmt.Errorf("%w: a CA rotation runs already; finish it first", ErrConflict)
	ErrNoCARotation = fmt.Errorf("%w: no CA rotation runs", ErrConflict)
)
