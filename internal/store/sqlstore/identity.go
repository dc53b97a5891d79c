package sqlstore

import (
	"context"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

const (
	insertClusterCA = `INSERT INTO cluster_ca (id, cert_pem, key_pem, created_at) VALUES (1, $1, $2, $3)
ON CONFLICT (id) DO NOTHING`
	selectClusterCA = `SELECT cert_pem, key_pem FROM cluster_ca WHERE id = 1`
	insertJoinToken = `INSERT INTO join_tokens (id, token_hash, created_at, expires_at, uses_left) VALUES ($1, $2, $3, $4, $5)`
	spendJoinToken  = `UPDATE join_tokens SET uses_left = uses_left - 1
WHERE token_hash = $1 AND expires_at > $2 AND (uses_left IS NULL OR uses_left > 0)`
	existsJoinToken = `SELECT COUNT(*) FROM join_tokens WHERE token_hash = $1`
	// Joins take the CA's row lock: an id's first certificate has no row
	// to lock, and two joins of one id must not both see it free.
	lockJoins      = `SELECT id FROM cluster_ca WHERE id = 1 {lock}`
	liveAgentCerts = `SELECT serial FROM agent_certificates
WHERE agent_id = $1 AND revoked_at IS NULL AND not_after > $2 ORDER BY serial`
	liveAgentCert = `SELECT COUNT(*) FROM agent_certificates
WHERE serial = $1 AND agent_id = $2 AND revoked_at IS NULL AND not_after > $3`
	insertAgentCert  = `INSERT INTO agent_certificates (serial, agent_id, not_after, issuer) VALUES ($1, $2, $3, $4)`
	revokeAgentCerts = `UPDATE agent_certificates SET revoked_at = $2 WHERE agent_id = $1 AND revoked_at IS NULL`
	selectRevoked    = `SELECT serial FROM agent_certificates WHERE revoked_at IS NOT NULL AND not_after > $1 ORDER BY serial`

	selectFullCA = `SELECT cert_pem, key_pem, COALESCE(previous_cert_pem, ''), COALESCE(previous_key_pem, '')
FROM cluster_ca WHERE id = 1`
	rotateCA = `UPDATE cluster_ca SET previous_cert_pem = cert_pem, previous_key_pem = key_pem, cert_pem = $1, key_pem = $2
WHERE id = 1 AND previous_cert_pem IS NULL`
	nameOldIssuer = `UPDATE agent_certificates SET issuer = $1 WHERE issuer IS NULL`
	// An agent is stale while none of its live certificates is of the
	// current CA: an agent that renewed still has its old certificate
	// live until it expires, and that one must not hold up finishing.
	// An agent is stale when its newest live certificates, the ones it
	// presents, are none of issuer: one renewed through a manager that
	// had not yet seen the rotation holds a new-CA certificate it no
	// longer uses beside the old-CA one it does. Certificates expire to
	// the second, so two issued within one tie; either may be in use.
	staleAgents = `SELECT DISTINCT agent_id FROM agent_certificates c
WHERE revoked_at IS NULL AND not_after > $2
  AND not_after = (SELECT MAX(n.not_after) FROM agent_certificates n
    WHERE n.agent_id = c.agent_id AND n.revoked_at IS NULL AND n.not_after > $2)
  AND NOT EXISTS (SELECT 1 FROM agent_certificates n
    WHERE n.agent_id = c.agent_id AND n.issuer = $1 AND n.revoked_at IS NULL AND n.not_after = c.not_after)
ORDER BY agent_id`
	finishCA = `UPDATE cluster_ca SET previous_cert_pem = NULL, previous_key_pem = NULL
WHERE id = 1 AND previous_cert_pem IS NOT NULL`
)

// InitClusterCA stores the first CA and returns the stored one.
func (s *Store) InitClusterCA(ctx context.Context, certPEM, keyPEM []byte, at time.Time) (cert, key []byte, err error) {
	err = s.write(ctx, "init cluster ca", func(tx txn) error {
		if _, err := tx.exec(ctx, insertClusterCA, string(certPEM), string(keyPEM), at.UTC()); err != nil {
			return err
		}
		var c, k string
		if err := tx.queryRow(ctx, selectClusterCA).Scan(&c, &k); err != nil {
			return err
		}
		cert, key = []byte(c), []byte(k)
		return nil
	})
	return cert, key, err
}

// CreateJoinToken stores a join token's hash.
func (s *Store) CreateJoinToken(ctx context.Context, t store.JoinToken, hash []byte) error {
	var uses any
	if t.Uses > 0 {
		uses = int64(t.Uses)
	}
	return s.write(ctx, "create join token", func(tx txn) error {
		_, err := tx.exec(ctx, insertJoinToken, t.ID, hash, t.CreatedAt.UTC(), t.ExpiresAt.UTC(), uses)
		return err
	})
}

// JoinAgent spends a token's use and records the agent's certificate.
func (s *Store) JoinAgent(ctx context.Context, hash []byte, c store.AgentCertificate, now time.Time) error {
	return s.write(ctx, "join agent "+string(c.Agent), func(tx txn) error {
		if err := tx.lock(ctx, lockJoins); err != nil {
			return err
		}
		n, err := tx.exec(ctx, spendJoinToken, hash, now.UTC())
		if err != nil {
			return err
		}
		if n == 0 {
			var found int64
			if err := tx.queryRow(ctx, existsJoinToken, hash).Scan(&found); err != nil {
				return err
			}
			if found == 0 {
				return store.ErrUnknownJoinToken
			}
			return store.ErrJoinTokenSpent
		}
		live, err := queryAll(ctx, tx, liveAgentCerts, []any{string(c.Agent), now.UTC()}, scanString)
		if err != nil {
			return err
		}
		if len(live) > 0 {
			return store.ErrIdentityTaken
		}
		_, err = tx.exec(ctx, insertAgentCert, c.Serial, string(c.Agent), c.NotAfter.UTC(), nullable(c.Issuer))
		return err
	})
}

// RenewAgentCertificate records a certificate for a live one's holder.
func (s *Store) RenewAgentCertificate(ctx context.Context, old string, c store.AgentCertificate, now time.Time) error {
	return s.write(ctx, "renew agent "+string(c.Agent), func(tx txn) error {
		var found int64
		if err := tx.queryRow(ctx, liveAgentCert, old, string(c.Agent), now.UTC()).Scan(&found); err != nil {
			return err
		}
		if found == 0 {
			return store.ErrIdentityTaken
		}
		_, err := tx.exec(ctx, insertAgentCert, c.Serial, string(c.Agent), c.NotAfter.UTC(), nullable(c.Issuer))
		return err
	})
}

// RevokeAgentCertificates revokes the agent's certificates.
func (s *Store) RevokeAgentCertificates(ctx context.Context, agent domain.AgentID, at time.Time) (int, error) {
	var n int64
	err := s.write(ctx, "revoke certificates of agent "+string(agent), func(tx txn) error {
		var err error
		n, err = tx.exec(ctx, revokeAgentCerts, string(agent), at.UTC())
		return err
	})
	return int(n), err
}

// RevokedCertificates lists revoked serials still to be refused.
func (s *Store) RevokedCertificates(ctx context.Context, now time.Time) ([]string, error) {
	return readAll(ctx, s, "revoked certificates", selectRevoked, []any{now.UTC()}, scanString)
}

func scanString(sc codec.Scanner) (string, error) {
	var v string
	err := sc.Scan(&v)
	return v, err
}

// nullable stores an empty string as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ClusterCA reads the stored CA and, during a rotation, the previous one.
func (s *Store) ClusterCA(ctx context.Context) (store.ClusterCA, error) {
	var out store.ClusterCA
	err := s.read(ctx, "cluster ca", func(tx txn) error {
		var c, k, pc, pk string
		if err := tx.queryRow(ctx, selectFullCA).Scan(&c, &k, &pc, &pk); err != nil {
			return err
		}
		out = store.ClusterCA{CertPEM: []byte(c), KeyPEM: []byte(k)}
		if pc != "" {
			out.PreviousCertPEM, out.PreviousKeyPEM = []byte(pc), []byte(pk)
		}
		return nil
	})
	return out, err
}

// RotateClusterCA puts next in place and keeps the current CA as previous.
func (s *Store) RotateClusterCA(ctx context.Context, next store.ClusterCA, oldIssuer string, at time.Time) error {
	return s.write(ctx, "rotate cluster ca", func(tx txn) error {
		if err := tx.lock(ctx, lockJoins); err != nil {
			return err
		}
		n, err := tx.exec(ctx, rotateCA, string(next.CertPEM), string(next.KeyPEM))
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrCARotating
		}
		_, err = tx.exec(ctx, nameOldIssuer, oldIssuer)
		return err
	})
}

// StaleAgents lists agents with no live certificate of issuer.
func (s *Store) StaleAgents(ctx context.Context, issuer string, now time.Time) ([]domain.AgentID, error) {
	return readAll(ctx, s, "stale agents", staleAgents, []any{issuer, now.UTC()}, scanAgentID)
}

// FinishCARotation drops the previous CA once no live agent needs it.
func (s *Store) FinishCARotation(ctx context.Context, issuer string, now time.Time) error {
	return s.write(ctx, "finish ca rotation", func(tx txn) error {
		// The joins' lock: a join under the old CA cannot slip in
		// between the check and the drop. A renewal takes no lock: it
		// needs a live certificate, so it cannot make an agent stale.
		if err := tx.lock(ctx, lockJoins); err != nil {
			return err
		}
		stale, err := queryAll(ctx, tx, staleAgents, []any{issuer, now.UTC()}, scanAgentID)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			return &store.CARotationPending{Agents: stale}
		}
		n, err := tx.exec(ctx, finishCA)
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNoCARotation
		}
		return nil
	})
}

func scanAgentID(sc codec.Scanner) (domain.AgentID, error) {
	v, err := scanString(sc)
	return domain.AgentID(v), err
}
