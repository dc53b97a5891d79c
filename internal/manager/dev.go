package manager

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/deploy"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
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
	// AgentDevices are the devices each local agent hands out (fakes such
	// as "cuda:2" declared with --agent-devices); every agent gets its own
	// copy, as a host's GPUs belong to its one agent.
	AgentDevices []domain.Device
	// AdminToken is used when set (SOKOVAN_ADMIN_TOKEN); otherwise the one
	// saved in DataDir/admin-token, or a new one.
	AdminToken  string
	Coordinator coordinator.Config
	// Deploy tunes the deployment controller (tests shorten its bounds).
	Deploy deploy.Config
	Log    *slog.Logger
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
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	admin, err := adminToken(cfg.DataDir, cfg.AdminToken)
	if err != nil {
		return err
	}
	agentToken, err := randomToken("skva_")
	if err != nil {
		return err
	}
	mcfg := Config{DB: filepath.Join(cfg.DataDir, "sokovan.db"), Listen: cfg.Listen, AgentToken: agentToken,
		Coordinator: cfg.Coordinator, Deploy: cfg.Deploy, Log: cfg.Log,
		// Dev mode's shared settings are a file, edited live.
		Config: "file://" + filepath.Join(cfg.DataDir, "config.json")}
	if cfg.UserAPI != nil {
		mcfg.UserAPI = func(p Parts) (http.Handler, error) { return cfg.UserAPI(p, admin) }
	}
	m, err := Open(ctx, mcfg)
	if err != nil {
		return err
	}
	// Saved only once the manager has accepted it, so a mistyped
	// SOKOVAN_ADMIN_TOKEN never replaces the token that opens this dir.
	if err := saveAdminToken(cfg.DataDir, admin); err != nil {
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
			Listen: devListen(ctx, m.Store, id), Capacity: cfg.AgentCapacity, Runtime: "process", Log: cfg.Log,
			AllowsCommand: true, Devices: slices.Clone(cfg.AgentDevices)})
		if err != nil {
			stopManager()
			<-mdone
			return err
		}
		rt, err := process.New(process.Config{DataDir: filepath.Join(cfg.DataDir, "agents", string(id)),
			Catalog: process.DefaultCatalog(self), Sink: a.Sink, Log: cfg.Log,
			// Dev mode is the user's own machine, run by the user: the
			// commands are theirs to run, as in their own shell.
			AllowCommand: true})
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

// adminToken picks the admin token: the one given (SOKOVAN_ADMIN_TOKEN),
// else the one saved in DataDir/admin-token, else a new one. It writes
// nothing; see saveAdminToken.
func adminToken(dir, fromEnv string) (string, error) {
	token := strings.TrimSpace(fromEnv)
	if token == "" {
		if raw, err := os.ReadFile(filepath.Join(dir, "admin-token")); err == nil {
			token = strings.TrimSpace(string(raw))
		}
	}
	if token == "" {
		return randomToken("skv_")
	}
	return token, nil
}

// saveAdminToken keeps the accepted token in DataDir/admin-token (0600), so
// a restart and the CLI find it. A token stored already is kept: another
// admin's token in SOKOVAN_ADMIN_TOKEN opens this run, but replacing the
// file with it would leave the first admin's token nowhere. It writes the
// file whole, by rename, so a crash leaves it or nothing, never half.
func saveAdminToken(dir, token string) error {
	path := filepath.Join(dir, "admin-token")
	if raw, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(raw)) != "" {
		return nil
	}
	tmp, err := os.CreateTemp(dir, ".admin-token-*")
	if err != nil {
		return fmt.Errorf("dev: save admin token: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(token + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("dev: save admin token: %w", err)
	}
	return nil
}

// lockDataDir holds an exclusive lock on DataDir for as long as dev mode
// runs: a second dev mode on the same dir would kill the first one's
// kernels (each process runtime clears its cgroups on start) and write the
// same SQLite file. The lock is the kernel's, so it dies with the process.
func lockDataDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dev: lock data dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := "another process"
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				who = "process " + pid
			}
			return nil, fmt.Errorf("dev: data dir %s is in use by %s (another sokovan dev?); stop it or pass another --data-dir", dir, who)
		}
		return nil, fmt.Errorf("dev: lock data dir: %w", err)
	}
	// Who holds it, for the message above; the lock, not the file, decides.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	}
	return func() { f.Close() }, nil
}

func randomToken(prefix string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// devListen is where a dev agent listens: the address it had before a
// restart when that port is free, else any port. The gateway refuses a live
// agent's registration from a new address (it would take the agent over),
// and the stopped agent's record looks alive until its heartbeat timeout,
// so a new port would keep the agent out for up to that long.
func devListen(ctx context.Context, st store.Store, id domain.AgentID) string {
	const anyPort = "127.0.0.1:0"
	prev, err := st.GetAgent(ctx, id)
	if err != nil {
		return anyPort
	}
	addr := strings.TrimPrefix(prev.Address, "http://")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return anyPort
	}
	ln.Close()
	return addr
}
