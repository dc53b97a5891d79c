package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	if host, ok := p.DirectHost(); ok {
		return net.JoinHostPort(host, strconv.Itoa(p.Port)), nil
	}
	a, err := agents.GetAgent(ctx, k.Agent)
	if err != nil {
		return "", fmt.Errorf("agent %s of kernel %s: %w", k.Agent, k.ID, err)
	}
	host, err := domain.DialHost(*p, a.Address)
	switch {
	case errors.Is(err, domain.ErrLoopbackOnly):
		return "", fmt.Errorf("%w: kernel %s serves on agent %s's loopback only", ErrUnreachable, k.ID, a.ID)
	case err != nil:
		return "", fmt.Errorf("%w: agent %s has no usable address", ErrUnreachable, a.ID)
	}
	return net.JoinHostPort(host, strconv.Itoa(p.Port)), nil
}
