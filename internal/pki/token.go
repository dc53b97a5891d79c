package pki

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// JoinTokenPrefix starts every join token, so one found in a log reads
// as a credential to join agents with.
const JoinTokenPrefix = "skvj_"

// NewJoinToken makes a join token's secret: 256 random bits.
func NewJoinToken() string { return NewSecret(JoinTokenPrefix) }

// HashJoinToken is how a join token is stored and looked up.
func HashJoinToken(token string) []byte { return HashSecret(token) }

// NewSecret is prefix and 256 random bits, base64url without padding:
// the form of every bearer secret the cluster hands out.
func NewSecret(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail (it aborts the program instead)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret is how a secret of NewSecret's is stored: its SHA-256. A
// secret carries 256 random bits, so a fast unsalted hash is enough; a
// copy of the stored hashes grants nothing.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}
