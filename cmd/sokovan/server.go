package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/manager"
)

func newServerCmd() *cobra.Command {
	var cfg manager.Config
	var metricsToken, caOut string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a manager (SQLite file or PostgreSQL)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.DB == "" {
				cfg.DB = os.Getenv("SOKOVAN_DB")
			}
			if cfg.AgentToken == "" {
				cfg.AgentToken = os.Getenv("SOKOVAN_AGENT_TOKEN")
			}
			if cfg.Events == "" {
				cfg.Events = os.Getenv("SOKOVAN_EVENTS")
			}
			if cfg.Config == "" {
				cfg.Config = os.Getenv("SOKOVAN_CONFIG")
			}
			if cfg.AgentToken == "" {
				return errors.New("--agent-token (or SOKOVAN_AGENT_TOKEN) is required")
			}
			if err := checkKeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
				return err
			}
			cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			admin := os.Getenv("SOKOVAN_ADMIN_TOKEN")
			if metricsToken == "" {
				metricsToken = os.Getenv("SOKOVAN_METRICS_TOKEN")
			}
			apiCfg := api.Config{MetricsToken: metricsToken}
			cfg.UserAPI = func(p manager.Parts) (httpHandler, error) { return userAPIWith(p, admin, apiCfg) }
			m, err := manager.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if caOut != "" {
				if len(m.ClusterCA) == 0 {
					return errors.New("--cluster-ca-out needs --agent-identity")
				}
				if err := os.WriteFile(caOut, m.ClusterCA, 0o644); err != nil {
					return fmt.Errorf("--cluster-ca-out: %w", err)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Sokovan-Go manager on %s\n", m.URL())
			return m.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DB, "db", "", "postgres://… or a SQLite file (or SOKOVAN_DB)")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:8470", "API address")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with, API, dashboard and agents alike; "+
		"read again when it changes, so it rotates without a restart (with --tls-key)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&cfg.AgentToken, "agent-token", "", "token agents present (or SOKOVAN_AGENT_TOKEN); without --agent-identity anyone holding it may speak for any agent (insecure, for dev)")
	f.BoolVar(&cfg.AgentIdentity, "agent-identity", false, "give every agent a certificate of the cluster CA (agents join with a token from: sokovan agent token create); the manager serves TLS and knows agents by their certificates")
	f.DurationVar(&cfg.AgentCertTTL, "agent-cert-ttl", 0, "lifetime of an agent certificate with --agent-identity (default 168h; agents renew at 2/3)")
	f.StringVar(&caOut, "cluster-ca-out", "", "with --agent-identity, write the cluster CA's certificate (PEM) here at start: what agents (--manager-ca) and clients trust the manager's TLS with")
	f.BoolVar(&cfg.AgentTokenAllowed, "agent-token-allowed", false, "with --agent-identity, still let agents without a certificate in with the agent token (insecure; while moving agents over)")
	f.DurationVar(&cfg.Coordinator.ShortInterval, "cycle-interval", time.Second, "how often every handler runs")
	f.DurationVar(&cfg.Coordinator.LongInterval, "sweep-interval", 30*time.Second, "how often agent loss is checked")
	f.DurationVar(&cfg.Coordinator.HeartbeatTimeout, "heartbeat-timeout", 30*time.Second, "silence after which an agent is LOST")
	f.DurationVar(&cfg.Coordinator.LostGrace, "lost-grace", 30*time.Second, "time a LOST agent's kernels are kept")
	f.StringVar(&cfg.Config, "config", "", "shared settings: etcd://host:port/key or file:///path (or SOKOVAN_CONFIG)")
	f.StringVar(&cfg.EventsStream, "events-stream", "", "Redis stream name shared by the cluster's managers")
	f.StringVar(&cfg.Events, "events", "", "redis://… to share agent events between managers (or SOKOVAN_EVENTS)")
	f.StringVar(&metricsToken, "metrics-token", "", "bearer token that lets a scraper see the per-user and per-deployment "+
		"series of /metrics, which anonymous scrapes leave out (or SOKOVAN_METRICS_TOKEN; an admin's token also sees them)")
	return cmd
}

// checkKeyPair refuses, before anything is opened, a TLS certificate and
// key that cannot serve, naming the flag at fault.
func checkKeyPair(certFile, keyFile string) error {
	switch {
	case certFile == "" && keyFile == "":
		return nil
	case certFile == "":
		return errors.New("--tls-key needs --tls-cert")
	case keyFile == "":
		return errors.New("--tls-cert needs --tls-key")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("--tls-cert: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("--tls-key: %w", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("--tls-cert %s and --tls-key %s: %w", certFile, keyFile, err)
	}
	return nil
}
