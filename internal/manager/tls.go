package manager

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// keyPairFiles serves a certificate and key read from files, read again
// when either file changes, so a rotated certificate is presented from the
// next handshake on without a restart.
type keyPairFiles struct {
	certFile, keyFile string
	log               *slog.Logger

	mu    sync.Mutex
	cur   *tls.Certificate
	stamp [2]fileStamp // of the files cur was read from
}

// fileStamp tells a rewritten file (mtime, size) or a replaced one
// (rename: another inode gives another mtime) from the one last read.
type fileStamp struct {
	mod  time.Time
	size int64
}

func openKeyPair(certFile, keyFile string, log *slog.Logger) (*keyPairFiles, error) {
	k := &keyPairFiles{certFile: certFile, keyFile: keyFile, log: log}
	stamp, err := k.stamps()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("manager: TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	k.cur, k.stamp = &cert, stamp
	return k, nil
}

func (k *keyPairFiles) stamps() ([2]fileStamp, error) {
	var out [2]fileStamp
	for i, name := range []string{k.certFile, k.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return out, fmt.Errorf("manager: TLS file: %w", err)
		}
		out[i] = fileStamp{mod: fi.ModTime(), size: fi.Size()}
	}
	return out, nil
}

// certificate is tls.Config.GetCertificate. Two stats per handshake are
// cheap beside the handshake itself. A pair that fails to load — caught
// between the writes of the certificate and the key, say — leaves the
// last good one in use and is tried again on the next handshake.
func (k *keyPairFiles) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	stamp, err := k.stamps()
	if err != nil || stamp == k.stamp {
		if err != nil {
			k.log.Warn("TLS certificate files unreadable; serving the last one read", "err", err)
		}
		return k.cur, nil
	}
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		k.log.Warn("TLS certificate files changed but do not load; serving the last one read", "err", err)
		return k.cur, nil
	}
	k.cur, k.stamp = &cert, stamp
	k.log.Info("TLS certificate reloaded", "cert", k.certFile)
	return k.cur, nil
}

// tlsConfig serves k's certificate over TLS 1.2 or later. It offers
// HTTP/1.1 only: the session and deployment proxies tunnel websockets by
// hijacking the connection, which HTTP/2 does not allow.
func (k *keyPairFiles) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: k.certificate, NextProtos: []string{"http/1.1"}}
}
