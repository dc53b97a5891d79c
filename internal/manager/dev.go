package manager

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// DevConfig is `sokovan dev`: a manager on SQLite under DataDir and Agents
// local agents on the process runtime, in one process.
type DevConfig struct {
	DataDir string
	Listen  string
	Agents  int
	// AgentCapacity, when set, is what each local agent offers; otherwise
	// each offers the whole machine (they share it, as dev mode is for
	// trying things, not for isolation).
	AgentCapacity map[string]string
	// AdminToken is used when set (SOKOVAN_ADMIN_TOKEN); otherwise the one
	// saved in DataDir/admin-token, or a new one.
	AdminToken  string
	Coordinator coordinator.Config
	Log         *slog.Logger
	// UserAPI builds the user API; it is given the admin token to bootstrap.
	UserAPI func(p Parts, adminToken string) (http.Handler, error)
	// SelfExe runs serving images (http-echo); the running binary when empty.
	SelfExe string
}

// DevInfo is what a started dev manager tells its user.
type DevInfo struct {
	URL        string
	AdminToken string
	Agents     []domain.AgentID
	// Parts are the running manager's pieces, for in-process tests.
	Parts Parts
}

// RunDev starts dev mode and blocks until ctx ends; ready is called once
// the manager serves and the agents are starting.
func RunDev(ctx context.Context, cfg DevConfig, ready func(DevInfo)) error {
	if cfg.Agents < 0 {
		return errors.New("dev: --agents must not be negative")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("dev: data dir: %w", err)
	}
	admin, err := adminToken(cfg.DataDir, cfg.AdminToken)
	if err != nil {
		return err
	}
	agentToken, err := randomToken("skva_")
	if err != nil {
		return err
	}
	mcfg := Config{DB: filepath.Join(cfg.DataDir, "sokovan.db"), Listen: cfg.Listen, AgentToken: agentToken,
		Coordinator: cfg.Coordinator, Log: cfg.Log,
		// Dev mode's shared settings are a file, edited live.
		Config: "file://" + filepath.Join(cfg.DataDir, "config.json")}
	if cfg.UserAPI != nil {
		mcfg.UserAPI = func(p Parts) (http.Handler, error) { return cfg.UserAPI(p, admin) }
	}
	m, err := Open(ctx, mcfg)
	if err != nil {
		return err
	}
	self := cfg.SelfExe
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("dev: find own binary: %w", err)
		}
	}
	mctx, stopManager := context.WithCancel(context.Background())
	defer stopManager()
	mdone := make(chan error, 1)
	go func() { mdone <- m.Run(mctx) }()

	actx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	var wg sync.WaitGroup
	agentErrs := make(chan error, cfg.Agents)
	info := DevInfo{URL: m.URL(), AdminToken: admin, Parts: m.Parts}
	for i := range cfg.Agents {
		id := domain.AgentID(fmt.Sprintf("dev-agent-%d", i))
		info.Agents = append(info.Agents, id)
		a, err := agent.New(agent.Config{ID: id, ResourceGroup: "default", Manager: m.URL(), Token: agentToken,
			Listen: "127.0.0.1:0", Capacity: cfg.AgentCapacity, Runtime: "process", Log: cfg.Log})
		if err != nil {
			stopManager()
			<-mdone
			return err
		}
		rt, err := process.New(process.Config{DataDir: filepath.Join(cfg.DataDir, "agents", string(id)),
			Catalog: process.DefaultCatalog(self), Sink: a.Sink, Log: cfg.Log})
		if err != nil {
			stopManager()
			<-mdone
			return fmt.Errorf("dev: runtime of %s: %w", id, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(actx, rt); err != nil {
				agentErrs <- fmt.Errorf("%s: %w", id, err)
			}
		}()
	}
	if ready != nil {
		ready(info)
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-mdone:
		mdone <- runErr
	}
	// Agents first, while the manager still listens; then the manager.
	stopAgents()
	wg.Wait()
	stopManager()
	if err := <-mdone; runErr == nil {
		runErr = err
	}
	close(agentErrs)
	for err := range agentErrs {
		cfg.Log.Warn("agent stopped with an error", "err", err)
	}
	return runErr
}

// adminToken picks the admin token and saves it to DataDir/admin-token
// (0600), so a restart keeps it.
func adminToken(dir, fromEnv string) (string, error) {
	path := filepath.Join(dir, "admin-token")
	token := strings.TrimSpace(fromEnv)
	if token == "" {
		if raw, err := os.ReadFile(path); err == nil {
			token = strings.TrimSpace(string(raw))
		}
	}
	if token == "" {
		var err error
		if token, err = randomToken("skv_"); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("dev: save admin token: %w", err)
	}
	// WriteFile keeps an existing file's mode; make sure it is private.
	if err := os.Chmod(path, 0o600); err != nil {
		return "", fmt.Errorf("dev: admin token: %w", err)
	}
	return token, nil
}

func randomToken(prefix string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}
