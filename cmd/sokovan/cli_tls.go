package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// caFlag is the persistent flag of every client verb (agent run included)
// naming a CA to trust for an https:// manager.
const caFlag = "ca"

func registerCA(cmd *cobra.Command) {
	cmd.PersistentFlags().String(caFlag, "", "PEM file of a CA to trust, beside the system's, for an https:// manager (or SOKOVAN_CA; `login` saves it)")
}

// caFile is the CA the command was given: --ca, else SOKOVAN_CA, else
// saved. cmd may be nil (a command without the flag).
func caFile(cmd *cobra.Command, saved string) string {
	if cmd != nil {
		if f := cmd.Flags().Lookup(caFlag); f != nil && f.Value.String() != "" {
			return f.Value.String()
		}
	}
	if v := os.Getenv("SOKOVAN_CA"); v != "" {
		return v
	}
	return saved
}

// caPool is the system's authorities and the one in path; nil path, nil
// pool (the system's alone).
func caPool(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca (or SOKOVAN_CA): %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system store here: the file alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca (or SOKOVAN_CA) %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// transport is an HTTP transport trusting pool (nil: the system's).
func transport(pool *x509.CertPool) http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	return t
}

// absPath keeps a saved CA usable from another directory.
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// tlsHint says what to do about a certificate the client refused; other
// errors pass unchanged.
func tlsHint(err error) error {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("%w (the manager's certificate is signed by an unknown authority: give its CA with --ca FILE or SOKOVAN_CA)", err)
	case errors.As(err, &host):
		return fmt.Errorf("%w (the manager's certificate does not name the host in the address: use a name it was issued for)", err)
	case errors.As(err, &verify):
		return fmt.Errorf("%w (the manager's certificate is not trusted)", err)
	}
	return err
}
