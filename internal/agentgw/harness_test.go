package agentgw_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agentgw"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
)

const token = "agent-token"

// manager is the manager's side of the wire as internal/manager wires it —
// a SQLite store, the coordinator calling agents through agentgw.Agents
// over HTTP, the gateway on an httptest server — with the coordinator
// driven by hand on an injected clock. Agents are real agent daemons with
// the sim runtime.
type manager struct {
	t     *testing.T
	ctx   context.Context
	st    store.Store
	reg   *domain.Registry
	clock *clock.Manual
	co    *coordinator.Coordinator
	url   string
	n     int
	// With identities: the cluster CA, the roots agents check the
	// manager with before they have a certificate, and a join token.
	ca        *pki.CA
	joinRoots *x509.CertPool
	joinToken string
	agents    *agentrpc.AgentClient
	gw        *agentgw.Gateway
	// mgrPair is the manager's certificate; certTTL agents' lifetime.
	mgrPair *pki.Keypair
	certTTL time.Duration
}

func newManager(t *testing.T) *manager {
	t.Helper()
	return newManagerWith(t, false)
}

// newIdentityManager is newManager with agents' identities on: the manager
// serves TLS with its own certificate of the cluster CA, agents must
// present theirs, and the shared token is refused.
func newIdentityManager(t *testing.T) *manager {
	t.Helper()
	return newManagerWith(t, true)
}

func newManagerWith(t *testing.T, identity bool, certTTL ...time.Duration) *manager {
	t.Helper()
	ctx := context.Background()
	reg := domain.DefaultRegistry()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sokovan.db"), sqlite.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.PutResourceGroup(ctx, domain.ResourceGroup{Name: "default", State: domain.GroupActive,
		Sequencer: "fifo", Selector: "dispersed", HeadOfLine: domain.HOLSkip, MaxRetries: 3,
		Timeouts: domain.DefaultTimeouts()}); err != nil {
		t.Fatal(err)
	}
	clock := clock.NewManual(time.Now())
	agents := agentrpc.NewAgentClient(st, token)
	co := coordinator.New(coordinator.Deps{Store: st, Agents: agentgw.NewAgents(agents, reg),
		Scheduler: scheduler.New(scheduler.NewRegistry()), Clock: clock},
		coordinator.Config{CallTimeout: 5 * time.Second})
	gw := agentgw.New(st, co, reg, token, clock.Now, nil)
	m := &manager{t: t, ctx: ctx, st: st, reg: reg, clock: clock, co: co, gw: gw, agents: agents}
	if !identity {
		srv := httptest.NewServer(gw)
		t.Cleanup(srv.Close)
		m.url = srv.URL
		return m
	}
	m.certTTL = time.Hour
	if len(certTTL) > 0 {
		m.certTTL = certTTL[0]
	}
	m.withIdentity(agents)
	return m
}

// withIdentity makes the cluster CA, the manager's certificate and a join
// token, and serves the gateway over TLS.
func (m *manager) withIdentity(agents *agentrpc.AgentClient) {
	m.t.Helper()
	certPEM, keyPEM, err := pki.NewCA("test cluster", time.Now())
	if err != nil {
		m.t.Fatal(err)
	}
	if certPEM, keyPEM, err = m.st.InitClusterCA(m.ctx, certPEM, keyPEM, time.Now()); err != nil {
		m.t.Fatal(err)
	}
	if m.ca, err = pki.LoadCA(certPEM, keyPEM); err != nil {
		m.t.Fatal(err)
	}
	mc, mk, err := m.ca.Issue(pki.Identity{Role: pki.RoleManager, ID: "m1"}, time.Hour, time.Now(), "127.0.0.1")
	if err != nil {
		m.t.Fatal(err)
	}
	pair, err := pki.NewKeypair(mc, mk)
	if err != nil {
		m.t.Fatal(err)
	}
	m.mgrPair = pair
	m.gw.UseIdentity(agentgw.Identity{CA: m.ca, Store: m.st, TTL: m.certTTL})
	// As internal/manager wires it: each agent must present its own
	// certificate, not revoked.
	agents.UseAgentTLS(func(ctx context.Context, id domain.AgentID) *tls.Config {
		return pki.ClientConfig(m.ca, pair, pki.Peer{Role: pki.RoleAgent, ID: string(id), Revoked: m.gw.Revoked(ctx)})
	})
	srv := httptest.NewUnstartedServer(m.gw)
	srv.Listener = tls.NewListener(srv.Listener, pki.OptionalClientConfig(m.ca, pair))
	srv.Start()
	m.t.Cleanup(srv.Close)
	m.url = strings.Replace(srv.URL, "http://", "https://", 1)
	m.joinRoots = m.ca.Pool()
	m.joinToken = pki.NewJoinToken()
	if err := m.st.CreateJoinToken(m.ctx, store.JoinToken{ID: "t1", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)},
		pki.HashJoinToken(m.joinToken)); err != nil {
		m.t.Fatal(err)
	}
}

// startAgent runs an agent daemon with the sim runtime until the test
// ends, and waits until it has registered. It heartbeats only once an
// hour, so the test alone decides when the agent falls silent.
func (m *manager) startAgent(id domain.AgentID, simCfg sim.Config) *agent.Agent {
	m.t.Helper()
	cfg := agent.Config{ID: id, ResourceGroup: "default", Manager: m.url, Token: token,
		Listen: "127.0.0.1:0", Architecture: "x86_64", Capacity: map[string]string{"cpu": "4", "mem": "8g"},
		HeartbeatInterval: time.Hour}
	scheme := "http://"
	if m.ca != nil {
		ident, err := agent.JoinCluster(m.ctx, m.url, m.joinRoots, id, m.joinToken, m.t.TempDir())
		if err != nil {
			m.t.Fatal(err)
		}
		cfg.Token, cfg.Identity, scheme = "", ident, "https://"
	}
	a, err := agent.New(cfg)
	if err != nil {
		m.t.Fatal(err)
	}
	simCfg.Sink = a.Sink
	rt, err := sim.New(simCfg)
	if err != nil {
		m.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(m.ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, rt) }()
	m.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			m.t.Errorf("agent %s: %v", id, err)
		}
	})
	m.eventually("agent "+string(id)+" registered", func() bool {
		got, err := m.st.GetAgent(m.ctx, id)
		return err == nil && got.Address == scheme+a.Addr()
	})
	return a
}

// submit creates a PENDING single-kernel session.
func (m *manager) submit(image string, env map[string]string) domain.SessionID {
	m.t.Helper()
	m.n++
	id := domain.SessionID(fmt.Sprintf("s-%d", m.n))
	req, err := m.reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g"})
	if err != nil {
		m.t.Fatal(err)
	}
	s := domain.Session{ID: id, Name: string(id), Owner: domain.Owner{User: "alice", Project: "p", Domain: "d"},
		Type: domain.TypeBatch, Image: image, Architecture: "x86_64", ResourceGroup: "default",
		ClusterMode: domain.SingleNode, ClusterSize: 1, Requested: req, Status: domain.SessionPending,
		CreatedAt: m.clock.Now(), Env: env}
	k := domain.Kernel{ID: domain.KernelID(string(id) + "-k0"), SessionID: id, ClusterRole: domain.RoleMain,
		Image: image, Architecture: "x86_64", Requested: req.Clone(), Status: domain.KernelPending}
	if err := m.st.CreateSession(m.ctx, s, []domain.Kernel{k}); err != nil {
		m.t.Fatal(err)
	}
	return id
}

// cycleUntil runs coordinator cycles until the session reaches want. The
// agent's events reach the gateway on their own, so it waits between
// cycles rather than counting them.
func (m *manager) cycleUntil(id domain.SessionID, want domain.SessionStatus) {
	m.t.Helper()
	m.eventually(fmt.Sprintf("%s %v", id, want), func() bool {
		if err := m.co.Cycle(m.ctx); err != nil {
			m.t.Fatalf("cycle: %v", err)
		}
		return m.session(id).Session.Status == want
	})
}

func (m *manager) session(id domain.SessionID) store.SessionWithKernels {
	m.t.Helper()
	s, err := m.st.GetSession(m.ctx, id)
	if err != nil {
		m.t.Fatal(err)
	}
	return s
}

func (m *manager) agent(id domain.AgentID) domain.Agent {
	m.t.Helper()
	a, err := m.st.GetAgent(m.ctx, id)
	if err != nil {
		m.t.Fatal(err)
	}
	return a
}

func (m *manager) history(id domain.SessionID) []domain.HistoryEntry {
	m.t.Helper()
	h, err := m.st.History(m.ctx, id)
	if err != nil {
		m.t.Fatal(err)
	}
	return h
}

func (m *manager) eventually(what string, cond func() bool) {
	m.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			m.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// post sends a request to the gateway as an agent would and returns the
// status code and the decoded error message, if any.
func (m *manager) post(path string, body any) (int, string) {
	m.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		m.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(m.ctx, http.MethodPost, m.url+path, bytes.NewReader(raw))
	if err != nil {
		m.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e agentrpc.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}
