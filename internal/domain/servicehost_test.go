package domain

import (
	"errors"
	"testing"
)

func TestDialHost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, bound, agent string
		want               string
		err                error
	}{
		{"bound to a concrete address", "10.0.0.7", "http://10.0.0.5:6001", "10.0.0.7", nil},
		{"bound to every address: the agent's host", "0.0.0.0", "http://10.0.0.5:6001", "10.0.0.5", nil},
		{"no host: the agent's host", "", "10.0.0.5:6001", "10.0.0.5", nil},
		{"every IPv6 address", "::", "http://[fd00::5]:6001", "fd00::5", nil},
		{"loopback of a dev agent on this host", "127.0.0.1", "http://127.0.0.1:6001", "127.0.0.1", nil},
		{"loopback of an agent named localhost", "127.0.0.1", "localhost:6001", "127.0.0.1", nil},
		// Dialled here, 127.0.0.1 would be the manager's own loopback.
		{"loopback of a remote agent", "127.0.0.1", "http://10.0.0.5:6001", "", ErrLoopbackOnly},
		{"agent without an address", "0.0.0.0", "", "", ErrNoAgentAddress},
	} {
		got, err := DialHost(ServicePort{Name: "http", Host: c.bound, Port: 8080}, c.agent)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("%s: %q, %v; want %q, %v", c.name, got, err, c.want, c.err)
		}
	}
}
