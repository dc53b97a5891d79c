package docker

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Files in a kernel's SSH directory, and the session's stored key.
const (
	sshPrivateFile    = "id_cluster"
	sshPublicFile     = "id_cluster.pub"
	sshAuthorizedFile = "authorized_keys"
)

// keyDerivationLabel separates the cluster key derivation from any other
// use of the same secret.
const keyDerivationLabel = "sokovan cluster ssh key v1\x00"

func (r *Runtime) sessionDir(s domain.SessionID) string {
	return filepath.Join(r.cfg.DataDir, "sessions", string(s))
}

// clusterKey returns the session's cluster SSH key: derived from
// ClusterKeySecret when one is configured, otherwise the one stored under
// the session's directory, generated on first use.
func (r *Runtime) clusterKey(s domain.SessionID) (ed25519.PrivateKey, error) {
	if len(r.cfg.ClusterKeySecret) > 0 {
		mac := hmac.New(sha256.New, r.cfg.ClusterKeySecret)
		mac.Write([]byte(keyDerivationLabel))
		mac.Write([]byte(s))
		return ed25519.NewKeyFromSeed(mac.Sum(nil)), nil // a SHA-256 sum is a seed's 32 bytes
	}
	r.keyMu.Lock()
	defer r.keyMu.Unlock()
	dir := r.sessionDir(s)
	path := filepath.Join(dir, sshPrivateFile)
	data, err := os.ReadFile(path)
	if err == nil {
		raw, err := ssh.ParseRawPrivateKey(data)
		if err != nil {
			return nil, fmt.Errorf("session %s: stored cluster key: %w", s, err)
		}
		key, ok := raw.(*ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("session %s: stored cluster key is a %T, not ed25519", s, raw)
		}
		return *key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", s, err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(key, clusterKeyComment(s))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// Written whole, then renamed, so a crash never leaves half a key for
	// the next run to choke on.
	tmp, err := os.CreateTemp(dir, sshPrivateFile+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(pem.EncodeToMemory(block))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, werr
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	return key, nil
}

func clusterKeyComment(s domain.SessionID) string { return "sokovan-cluster-" + string(s) }

// writeClusterSSH writes the session's key pair into dir, to be mounted at
// ClusterSSHDir.
func (r *Runtime) writeClusterSSH(s domain.SessionID, dir string) error {
	if err := validName(string(s)); err != nil {
		// The session id names a directory.
		return fmt.Errorf("%w: session id: %w", runtime.ErrInvalidSpec, err)
	}
	key, err := r.clusterKey(s)
	if err != nil {
		return fmt.Errorf("%w: cluster ssh key: %w", runtime.ErrCreateFailed, err)
	}
	block, err := ssh.MarshalPrivateKey(key, clusterKeyComment(s))
	if err != nil {
		return fmt.Errorf("%w: cluster ssh key: %w", runtime.ErrCreateFailed, err)
	}
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("%w: cluster ssh key: %w", runtime.ErrCreateFailed, err)
	}
	authorized := ssh.MarshalAuthorizedKey(pub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
	}
	// ssh refuses a private key that others may read.
	files := []struct {
		name string
		data []byte
		mode fs.FileMode
	}{
		{sshPrivateFile, pem.EncodeToMemory(block), 0o600},
		{sshPublicFile, authorized, 0o644},
		{sshAuthorizedFile, authorized, 0o644},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return fmt.Errorf("%w: %w", runtime.ErrCreateFailed, err)
		}
	}
	return nil
}

// dropSessionKeyIfUnused removes a session's stored key once no kernel of
// the session is left on this runtime.
func (r *Runtime) dropSessionKeyIfUnused(s domain.SessionID) {
	if s == "" || validName(string(s)) != nil {
		return
	}
	r.keyMu.Lock()
	defer r.keyMu.Unlock()
	if r.kernels.HasSession(s) {
		return
	}
	if err := os.RemoveAll(r.sessionDir(s)); err != nil {
		r.log.Warn("docker runtime: could not remove a session's cluster key", "session", s, "err", err)
	}
}
