package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// newSessionPortForwardCmd is `sokovan session port-forward`: a local
// listener that reaches a session's service port through the manager's
// proxy, as Backend.AI's app proxy does. Nothing but the manager's address
// needs to be reachable, and the manager checks the token on every request.
func newSessionPortForwardCmd() *cobra.Command {
	var address string
	cmd := &cobra.Command{
		Use:     "port-forward ID [LOCAL:]PORT",
		Aliases: []string{"app"},
		Short:   "Serve a session's port on a local port, through the manager",
		Long: `Listens on LOCAL (a free port when left out) on --address and passes every
request, websockets included, to the session's service port PORT — its name
("http", as in 'session show') or its number — through the manager's proxy
at /v1/sessions/ID/proxy/NAME/, with your token. Ctrl-C stops it.`,
		Example:           "  sokovan session port-forward 7f3c… 8080:http\n  curl http://127.0.0.1:8080/",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			local, remote, err := parseForward(args[1])
			if err != nil {
				return err
			}
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			var s v1.Session
			if _, err := c.do(cmd.Context(), "GET", sessionPath(args[0]), nil, &s); err != nil {
				return err
			}
			port, err := pickPort(s, remote)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(local)))
			if err != nil {
				return fmt.Errorf("listen on %s:%d: %w", address, local, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forwarding http://%s to port %s (%d) of session %s, kernel %s; Ctrl-C stops\n",
				ln.Addr(), port.Name, port.Port, s.ID, port.Kernel)
			return forward(cmd.Context(), ln, c, port.ProxyPath)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "local address to listen on")
	return cmd
}

// parseForward reads [LOCAL:]PORT.
func parseForward(arg string) (local int, remote string, err error) {
	l, r, ok := strings.Cut(arg, ":")
	if !ok {
		l, r = "0", arg
	}
	local, err = strconv.Atoi(l)
	if err != nil || local < 0 || local > 65535 || r == "" {
		return 0, "", fmt.Errorf("%q: want [LOCAL:]PORT, such as 8080:http, with LOCAL a port number", arg)
	}
	return local, r, nil
}

// pickPort finds the service port named, or numbered, remote.
func pickPort(s v1.Session, remote string) (v1.ServicePort, error) {
	var names []string
	for _, p := range s.ServicePorts {
		if p.Name == remote || strconv.Itoa(p.Port) == remote {
			return p, nil
		}
		names = append(names, fmt.Sprintf("%s (%d)", p.Name, p.Port))
	}
	if len(names) == 0 {
		return v1.ServicePort{}, fmt.Errorf("session %s serves no port now (it is %s)", s.ID, s.Status)
	}
	return v1.ServicePort{}, fmt.Errorf("session %s serves no port %q; it serves %s", s.ID, remote, strings.Join(names, ", "))
}

// forward serves ln until ctx ends, proxying to the manager's proxy path.
func forward(ctx context.Context, ln net.Listener, c *client, proxyPath string) error {
	base, err := url.Parse(c.addr + strings.TrimSuffix(proxyPath, "/"))
	if err != nil {
		return err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(base)
			pr.Out.Host = base.Host
			pr.Out.Header.Set("Authorization", "Bearer "+c.token)
		},
		Transport:     c.transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "sokovan port-forward: "+err.Error(), http.StatusBadGateway)
		},
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// printServicePorts ends `session show` with where the session serves.
func printServicePorts(w io.Writer, s v1.Session) error {
	if len(s.ServicePorts) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	rows := make([][]string, len(s.ServicePorts))
	for i, p := range s.ServicePorts {
		rows[i] = []string{p.Name, p.Protocol, p.Kernel, net.JoinHostPort(p.Host, strconv.Itoa(p.Port)), p.ProxyPath}
	}
	return table(w, []string{"PORT", "PROTOCOL", "KERNEL", "LISTENS ON", "PROXY"}, rows)
}
