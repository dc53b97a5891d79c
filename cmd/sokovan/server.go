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
	var insecureToken bool
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a manager (SQLite file or PostgreSQL)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.DB == "" {
				cfg.DB = os.Getenv("SOKOVAN_DB")
			}
			if cfg.Events == "" {
				cfg.Events = os.Getenv("SOKOVAN_EVENTS")
			}
			if cfg.Config == "" {
				cfg.Config = os.Getenv("SOKOVAN_CONFIG")
			}
			if err := agentAuth(cmd, &cfg, insecureToken); err != nil {
				return err
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
					return errors.New("--cluster-ca-out: with --insecure-shared-agent-token there is no cluster CA")
				}
				if err := writeFileAtomic(caOut, m.ClusterCA, 0o644); err != nil {
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
	f.StringVar(&cfg.AgentToken, "agent-token", "", "shared agent token (or SOKOVAN_AGENT_TOKEN), only with --insecure-shared-agent-token or --agent-token-allowed")
	f.BoolVar(&insecureToken, "insecure-shared-agent-token", false, "INSECURE, for dev and trusted networks: authenticate agents by the shared --agent-token "+
		"instead of a certificate each (anyone holding it may speak for any agent, and manager-agent calls go unencrypted without --tls-cert)")
	f.BoolVar(&cfg.AgentIdentity, "agent-identity", true, "give every agent a certificate of the cluster CA (agents join with a token from: sokovan agent token create); "+
		"the default, unless --insecure-shared-agent-token")
	f.DurationVar(&cfg.AgentCertTTL, "agent-cert-ttl", 0, "lifetime of an agent certificate (default 168h; agents renew at 2/3)")
	f.StringVar(&caOut, "cluster-ca-out", "", "write the cluster CA's certificate (PEM) here at start: what agents (--ca) trust the managers with")
	f.BoolVar(&cfg.AgentTokenAllowed, "agent-token-allowed", false, "with agent identities, still let agents without a certificate in with --agent-token "+
		"(insecure; while moving agents over)")
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

// agentAuth settles how agents are authenticated: by a certificate each
// (agent identities), unless the shared token's insecure mode is asked
// for by name. A shared token given without saying so is refused rather
// than quietly ignored or quietly trusted.
func agentAuth(cmd *cobra.Command, cfg *manager.Config, insecureToken bool) error {
	envToken := cfg.AgentToken == "" && os.Getenv("SOKOVAN_AGENT_TOKEN") != ""
	if envToken {
		cfg.AgentToken = os.Getenv("SOKOVAN_AGENT_TOKEN")
	}
	switch {
	case insecureToken && cmd.Flags().Changed("agent-identity") && cfg.AgentIdentity:
		return errors.New("--insecure-shared-agent-token and --agent-identity: pick one " +
			"(--agent-token-allowed keeps the shared token working beside identities while agents move over)")
	case insecureToken && cfg.AgentToken == "":
		return errors.New("--insecure-shared-agent-token needs --agent-token (or SOKOVAN_AGENT_TOKEN)")
	case insecureToken:
		cfg.AgentIdentity = false
	case !cfg.AgentIdentity:
		return errors.New("--agent-identity=false needs --insecure-shared-agent-token: without identities agents are " +
			"authenticated by the shared token alone")
	case cfg.AgentTokenAllowed && cfg.AgentToken == "":
		return errors.New("--agent-token-allowed needs --agent-token (or SOKOVAN_AGENT_TOKEN)")
	case cfg.AgentToken != "" && !cfg.AgentTokenAllowed:
		from := "--agent-token"
		if envToken {
			from = "SOKOVAN_AGENT_TOKEN"
		}
		return fmt.Errorf("%s: the shared agent token is the insecure dev mode; agents join with join tokens "+
			"(sokovan agent token create) by default. Add --insecure-shared-agent-token to run the shared token anyway, "+
			"--agent-token-allowed to accept it beside identities while agents move over, or drop it", from)
	}
	return nil
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
