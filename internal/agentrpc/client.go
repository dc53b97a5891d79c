package agentrpc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// AgentLookup finds an agent's address.
type AgentLookup interface {
	GetAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error)
}

// AgentClient is the manager calling agents. It speaks the wire's types;
// the manager side adapts it to the coordinator's port.
type AgentClient struct {
	lookup AgentLookup
	token  string
	hc     *http.Client
	mu     sync.Mutex
	addrs  map[domain.AgentID]string
	// peers caches each agent's kernel host (Host) beside its address.
	peers map[domain.AgentID]string
	// perAgent, when set (UseAgentTLS), makes each agent's TLS
	// configuration, and clients holds each agent's connections.
	perAgent func(context.Context, domain.AgentID) *tls.Config
	clients  map[domain.AgentID]*http.Client
	// conns are the open TLS connections to agents (DropRevoked).
	conns map[*trackedConn]struct{}
}

// NewAgentClient returns a client that finds agents through lookup.
func NewAgentClient(lookup AgentLookup, token string) *AgentClient {
	return &AgentClient{lookup: lookup, token: token, hc: &http.Client{Timeout: 10 * time.Minute},
		addrs: map[domain.AgentID]string{}, peers: map[domain.AgentID]string{}}
}

// base returns the agent's RPC base URL. Addresses are cached; a failed
// call forgets the agent's, since it may have come back elsewhere.
func (c *AgentClient) base(ctx context.Context, id domain.AgentID) (string, error) {
	c.mu.Lock()
	addr, ok := c.addrs[id]
	c.mu.Unlock()
	if !ok {
		a, err := c.lookup.GetAgent(ctx, id)
		if err != nil {
			return "", fmt.Errorf("agent %s: %w", id, err)
		}
		addr = a.Address
		if !strings.Contains(addr, "://") {
			addr = "http://" + addr
		}
		c.mu.Lock()
		c.addrs[id] = addr
		c.peers[id] = peerHost(a.KernelAddress, addr)
		c.mu.Unlock()
	}
	return strings.TrimRight(addr, "/"), nil
}

// Host is where other agents' kernels reach this agent's kernels; see
// peerHost.
func (c *AgentClient) Host(ctx context.Context, id domain.AgentID) (string, error) {
	if _, err := c.base(ctx, id); err != nil {
		return "", err
	}
	c.mu.Lock()
	h := c.peers[id]
	c.mu.Unlock()
	if h == "" {
		return "", fmt.Errorf("agent %s: neither its kernel address nor its address names a host", id)
	}
	return h, nil
}

// peerHost is an agent's registered kernel address, or, for an agent that
// registered none or a wildcard, the host part of the address the manager
// calls it at (base); empty when neither names a host.
func peerHost(kernelAddress, base string) string {
	if ip := net.ParseIP(kernelAddress); kernelAddress != "" && (ip == nil || !ip.IsUnspecified()) {
		return kernelAddress
	}
	if u, err := url.Parse(base); err == nil {
		return u.Hostname()
	}
	return ""
}

func (c *AgentClient) do(ctx context.Context, id domain.AgentID, path string, in, out any) error {
	base, err := c.base(ctx, id)
	if err != nil {
		return err
	}
	if err := call(ctx, c.client(id), base+path, c.token, in, out); err != nil {
		c.mu.Lock()
		delete(c.addrs, id)
		delete(c.peers, id)
		if hc, ok := c.clients[id]; ok {
			// Its next connection is made afresh, its certificate
			// checked again (revocation included), and an agent that
			// is gone for good leaves nothing behind.
			hc.CloseIdleConnections()
			delete(c.clients, id)
		}
		c.mu.Unlock()
		return fmt.Errorf("agent %s%s: %w", id, path, err)
	}
	return nil
}

// CheckAndPull asks an agent to make images present and says, per image,
// where each stands.
func (c *AgentClient) CheckAndPull(ctx context.Context, agent domain.AgentID, images []string) (map[string]PullState, error) {
	var out PullStates
	if err := c.do(ctx, agent, "/rpc/check_and_pull", CheckAndPull{Images: images}, &out); err != nil {
		return nil, err
	}
	return out.Images, nil
}

// CreateKernels asks an agent to start kernels; creating one that exists
// does nothing. It returns the kernels the agent did not start, each with
// why (matching ErrInvalidSpec when it can never start as specified), or
// an error for the call as a whole. An agent of an earlier release
// answers for the whole call: one refused kernel fails it.
func (c *AgentClient) CreateKernels(ctx context.Context, agent domain.AgentID, specs []KernelSpec) (map[domain.KernelID]error, error) {
	var out Created
	if err := c.do(ctx, agent, "/rpc/create_kernels", CreateKernels{Kernels: specs, PerKernel: true}, &out); err != nil {
		return nil, err
	}
	if len(out.Failed) == 0 {
		return nil, nil
	}
	failed := make(map[domain.KernelID]error, len(out.Failed))
	for _, f := range out.Failed {
		code := http.StatusInternalServerError
		if f.Code == CodeInvalidSpec {
			code = http.StatusBadRequest
		}
		failed[f.Kernel] = &StatusError{Code: code, Kind: f.Code, Message: f.Error}
	}
	return failed, nil
}

// Probe asks an agent whether it answers at all, as cheaply as it can:
// the list of its kernels, which it answers from memory.
func (c *AgentClient) Probe(ctx context.Context, agent domain.AgentID) error {
	_, err := c.Kernels(ctx, agent)
	return err
}

// DestroyKernel asks an agent to stop a kernel; it returns once the kernel
// has stopped or was already gone.
func (c *AgentClient) DestroyKernel(ctx context.Context, agent domain.AgentID, kernel domain.KernelID, forced bool) error {
	return c.do(ctx, agent, "/rpc/destroy_kernel", DestroyKernel{Kernel: kernel, Forced: forced}, nil)
}

// LogOffsetHeader is how an agent says it started a logs answer at the
// offset asked for. An agent of an earlier release ignores the offset and
// sends the whole log, without the header; Logs then skips the offset
// itself.
const LogOffsetHeader = "Sokovan-Log-Offset"

// Logs streams a kernel's output from its agent, from byte offset on.
func (c *AgentClient) Logs(ctx context.Context, agent domain.AgentID, kernel domain.KernelID, offset int64) (io.ReadCloser, error) {
	base, err := c.base(ctx, agent)
	if err != nil {
		return nil, err
	}
	u := base + "/rpc/logs/" + url.PathEscape(string(kernel))
	if offset > 0 {
		u += "?offset=" + strconv.FormatInt(offset, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.client(agent).Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &StatusError{Code: resp.StatusCode, Message: "logs of " + string(kernel)}
	}
	if offset > 0 && resp.Header.Get(LogOffsetHeader) == "" {
		if _, err := io.CopyN(io.Discard, resp.Body, offset); err != nil && !errors.Is(err, io.EOF) {
			resp.Body.Close()
			return nil, err
		}
	}
	return resp.Body, nil
}

// ManagerClient is an agent calling its managers. With several, a call
// that cannot reach one (or that one answers with a server error) moves on
// to the next, so an agent keeps working while a manager restarts.
type ManagerClient struct {
	bases []string
	token string
	hc    *http.Client
	// CallTimeout bounds one call to one manager before the next is tried
	// (zero: DefaultCallTimeout). A manager cut off by the network answers
	// nothing, not even a refusal: without a bound well under the
	// managers' heartbeat timeout, the agent would wait on it until the
	// others had declared it lost.
	CallTimeout time.Duration
	mu          sync.Mutex
	cur         int
}

// DefaultCallTimeout is ManagerClient.CallTimeout's default: with three
// managers, a call fails over from two silent ones well within the
// default 30 s heartbeat timeout.
const DefaultCallTimeout = 5 * time.Second

// NewManagerClient returns a client for the managers at bases, a comma-
// separated list of base URLs ("http://host:port").
func NewManagerClient(bases, token string) *ManagerClient {
	m := &ManagerClient{token: token, hc: &http.Client{Timeout: 30 * time.Second}}
	for _, b := range strings.Split(bases, ",") {
		if b = strings.TrimRight(strings.TrimSpace(b), "/"); b != "" {
			m.bases = append(m.bases, b)
		}
	}
	return m
}

// TrustRoots makes the client accept an https:// manager's certificate
// only when one of roots signed it. Set it before the first call.
func (m *ManagerClient) TrustRoots(roots *x509.CertPool) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	m.hc.Transport = t
}

func (m *ManagerClient) post(ctx context.Context, path string, in, out any) error {
	if len(m.bases) == 0 {
		return fmt.Errorf("no manager configured")
	}
	m.mu.Lock()
	start := m.cur
	m.mu.Unlock()
	limit := m.CallTimeout
	if limit <= 0 {
		limit = DefaultCallTimeout
	}
	var err error
	for i := range m.bases {
		n := (start + i) % len(m.bases)
		actx, cancel := context.WithTimeout(ctx, limit)
		err = call(actx, m.hc, m.bases[n]+path, m.token, in, out)
		cancel()
		if err == nil || IsRefused(err) || ctx.Err() != nil {
			m.mu.Lock()
			m.cur = n
			m.mu.Unlock()
			return err
		}
	}
	return err
}

// Register announces the agent.
func (m *ManagerClient) Register(ctx context.Context, in Register) (Registered, error) {
	var out Registered
	err := m.post(ctx, "/v1/agent/register", in, &out)
	return out, err
}

// Heartbeat reports the agent alive with its kernels.
func (m *ManagerClient) Heartbeat(ctx context.Context, in Heartbeat) (HeartbeatReply, error) {
	var out HeartbeatReply
	err := m.post(ctx, "/v1/agent/heartbeat", in, &out)
	return out, err
}

// Events delivers events; a manager has them once this returns nil.
func (m *ManagerClient) Events(ctx context.Context, in Events) error {
	return m.post(ctx, "/v1/agent/events", in, nil)
}

// Kernels asks an agent what it runs (for operators and tests).
func (c *AgentClient) Kernels(ctx context.Context, agent domain.AgentID) ([]KernelReport, error) {
	var out []KernelReport
	err := c.do(ctx, agent, "/rpc/kernels", struct{}{}, &out)
	return out, err
}
