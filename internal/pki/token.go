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
func NewJoinToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail (it aborts the program instead)
	return JoinTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashJoinToken is how a join token is stored and looked up: its SHA-256,
// enough for a secret of 256 random bits.
func HashJoinToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
