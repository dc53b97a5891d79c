package domain

import (
	"errors"
	"net"
	"net/url"
)

// Why a manager cannot reach a kernel's service port.
var (
	ErrNoAgentAddress = errors.New("agent has no usable address")
	// ErrLoopbackOnly: the port is bound to its agent's loopback, and the
	// agent is not on the manager's host.
	ErrLoopbackOnly = errors.New("serves on its agent's loopback only")
)

// DirectHost is the host a manager dials for p without asking where its
// agent is: the address the runtime bound it to, when that is a concrete,
// non-loopback address. ok is false when the agent's host is needed.
func (p ServicePort) DirectHost() (host string, ok bool) {
	ip := net.ParseIP(p.Host)
	if p.Host != "" && ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() {
		return p.Host, true
	}
	return "", false
}

// DialHost is where a manager reaches p, served by a kernel on the agent
// registered at agentAddress (a URL or host:port). A port bound to every
// address is reached at the agent's host. One bound to the agent's
// loopback is reached only when the agent is itself on this host's
// loopback (dev mode): dialled from anywhere else it would be the
// manager's own loopback, where its database, Redis and etcd listen, and
// a user's session could reach them through a proxy.
func DialHost(p ServicePort, agentAddress string) (string, error) {
	if host, ok := p.DirectHost(); ok {
		return host, nil
	}
	agentHost := addressHost(agentAddress)
	if agentHost == "" {
		return "", ErrNoAgentAddress
	}
	if ip := net.ParseIP(p.Host); ip != nil && ip.IsLoopback() {
		if !onLoopback(agentHost) {
			return "", ErrLoopbackOnly
		}
		return p.Host, nil
	}
	return agentHost, nil
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
