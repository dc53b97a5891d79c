package agent

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// DefaultRPCPort is the agent's RPC port when --listen names none.
const DefaultRPCPort = "6001"

// Addresses are where an agent listens, what it tells the manager, and
// where its kernels' service ports bind.
type Addresses struct {
	Listen    string // host:port of the RPC server
	Advertise string // URL the manager calls
	Kernel    string // address kernels given a port bind (Spec.BindHost)
}

// ResolveAddresses fills what the operator left empty in given from the
// route to the first of the comma-separated manager URLs: the address of
// the interface this host reaches the manager through, which is where the
// manager (and the other agents, in the manager's subnet) can reach this
// one. A manager on loopback gives 127.0.0.1, so a one-host setup binds
// nothing wider than it did.
//
//   - Listen: ROUTE:6001.
//   - Advertise: http://LISTEN, or http://ROUTE:PORT when LISTEN is a
//     wildcard (0.0.0.0, ::), which the manager cannot dial.
//   - Kernel: the advertised host when it is an IP address, else ROUTE.
//
// A listen or kernel address on loopback while the manager is elsewhere is
// refused: the manager could reach neither the agent nor its kernels.
func ResolveAddresses(manager string, given Addresses) (Addresses, error) {
	out := given
	var route string
	routeTo := func() (string, error) {
		if route != "" {
			return route, nil
		}
		r, err := RouteAddress(manager)
		if err != nil {
			return "", err
		}
		route = r
		return r, nil
	}
	if out.Listen == "" {
		r, err := routeTo()
		if err != nil {
			return Addresses{}, fmt.Errorf("--listen: %w (give --listen)", err)
		}
		out.Listen = net.JoinHostPort(r, DefaultRPCPort)
	}
	lh, lp, err := net.SplitHostPort(out.Listen)
	if err != nil {
		return Addresses{}, fmt.Errorf("--listen %q: want HOST:PORT: %v", out.Listen, err)
	}
	managerHost := urlHost(strings.Split(manager, ",")[0])
	if isLoopback(lh) && !isLoopback(managerHost) && given.Advertise == "" {
		return Addresses{}, fmt.Errorf("--listen %s is on loopback but the manager (%s) is not: it could not call "+
			"this agent; listen on an address it reaches (or leave --listen out) or give --advertise", out.Listen, managerHost)
	}
	if out.Advertise == "" {
		if isWildcard(lh) {
			if lp == "0" {
				return Addresses{}, fmt.Errorf("--listen %s: a wildcard address needs a port, or give --advertise", out.Listen)
			}
			r, err := routeTo()
			if err != nil {
				return Addresses{}, fmt.Errorf("--advertise: %w (give --advertise)", err)
			}
			out.Advertise = "http://" + net.JoinHostPort(r, lp)
		} else {
			out.Advertise = "http://" + out.Listen
		}
	}
	if out.Kernel == "" {
		h := urlHost(out.Advertise)
		if ip := net.ParseIP(h); ip != nil && !ip.IsUnspecified() {
			out.Kernel = h
		} else {
			r, err := routeTo()
			if err != nil {
				return Addresses{}, fmt.Errorf("--kernel-address: %w (give --kernel-address)", err)
			}
			out.Kernel = r
		}
	}
	if isLoopback(out.Kernel) && !isLoopback(managerHost) {
		return Addresses{}, fmt.Errorf("--kernel-address %s is on loopback but the manager (%s) is not: it could not "+
			"reach kernels' ports; give an address it reaches", out.Kernel, managerHost)
	}
	return out, nil
}

// RouteAddress is the local address this host reaches the first of the
// comma-separated manager URLs from. A UDP "connect" picks the route and
// the source address without sending anything.
func RouteAddress(manager string) (string, error) {
	first := strings.TrimSpace(strings.Split(manager, ",")[0])
	u, err := url.Parse(first)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("manager URL %q names no host", first)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	c, err := net.Dial("udp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return "", fmt.Errorf("no route to the manager %s: %w", u.Host, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

func urlHost(s string) string {
	if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return ""
}

func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// isLoopback: localhost or a loopback address; a name that is not
// localhost is taken to be reachable.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
