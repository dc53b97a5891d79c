package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// AgentGetter reads an agent, for where its kernels' ports are reached.
type AgentGetter interface {
	GetAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error)
}

// ErrUnreachable: the route's port cannot be reached from this manager.
var ErrUnreachable = errors.New("unreachable")

// Endpoint is where the manager reaches port of kernel k (0: its first
// service port), as host:port. A port bound to every address is reached
// at the agent's host; one bound to the agent's loopback only when the
// agent is itself on this host's loopback (dev mode): dialled from
// anywhere else it would be the manager's own loopback, where its
// database listens. This is the API's session proxy's rule.
func Endpoint(ctx context.Context, agents AgentGetter, k domain.Kernel, port int) (string, error) {
	var p *domain.ServicePort
	for i := range k.ServicePorts {
		if port == 0 || k.ServicePorts[i].Port == port {
			p = &k.ServicePorts[i]
			break
		}
	}
	if p == nil {
		if port == 0 {
			return "", fmt.Errorf("%w: kernel %s serves no port", ErrUnreachable, k.ID)
		}
		return "", fmt.Errorf("%w: kernel %s serves no port %d", ErrUnreachable, k.ID, port)
	}
	ip := net.ParseIP(p.Host)
	if p.Host != "" && ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() {
		return net.JoinHostPort(p.Host, strconv.Itoa(p.Port)), nil
	}
	a, err := agents.GetAgent(ctx, k.Agent)
	if err != nil {
		return "", fmt.Errorf("agent %s of kernel %s: %w", k.Agent, k.ID, err)
	}
	host := addressHost(a.Address)
	if host == "" {
		return "", fmt.Errorf("%w: agent %s has no usable address", ErrUnreachable, a.ID)
	}
	if ip != nil && ip.IsLoopback() {
		if !onLoopback(host) {
			return "", fmt.Errorf("%w: kernel %s serves on agent %s's loopback only", ErrUnreachable, k.ID, a.ID)
		}
		host = p.Host
	}
	return net.JoinHostPort(host, strconv.Itoa(p.Port)), nil
}

func addressHost(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return ""
}

func onLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
