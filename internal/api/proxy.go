package api

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// servicePort is a port of a session's running kernel under the name users
// address it by.
type servicePort struct {
	domain.ServicePort
	name   string
	kernel domain.Kernel
}

// servicePorts lists what the session's running kernels serve. Kernels of
// a cluster serve the same names, so a sub kernel's carry its index
// ("http-k1"), and the main kernel's keep the plain name. Only running
// kernels count: an ended kernel's port may belong to anyone since.
func servicePorts(sk store.SessionWithKernels) []servicePort {
	var out []servicePort
	for _, k := range sk.Kernels {
		if k.Status != domain.KernelRunning {
			continue
		}
		for _, p := range k.ServicePorts {
			name := p.Name
			if k.ClusterIdx > 0 {
				name += "-k" + strconv.Itoa(k.ClusterIdx)
			}
			out = append(out, servicePort{ServicePort: p, name: name, kernel: k})
		}
	}
	return out
}

func proxyPath(id domain.SessionID, port string) string {
	return "/v1/sessions/" + string(id) + "/proxy/" + port + "/"
}

// proxy forwards a request to a port the session's kernel serves. Only the
// session's owner or an admin reach it (anyone else gets the 404 of a
// missing session), with the same bearer token as the rest of the API; the
// token is not passed on, since the kernel runs the user's code and must
// not be able to act as them. Answers are streamed as they come and
// upgrades (websockets) are tunnelled, both by httputil.ReverseProxy.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	name := r.PathValue("port")
	port, err := findPort(sk, name)
	if err != nil {
		return err
	}
	host, err := s.dialHost(r, port)
	if err != nil {
		return err
	}
	release, err := s.proxies.acquire(caller(r.Context()).Name, sk.Session.ID)
	if err != nil {
		return err
	}
	defer release()
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort(host, strconv.Itoa(port.Port))}
	prefix := strings.TrimSuffix(proxyPath(sk.Session.ID, name), "/")
	rp := &httputil.ReverseProxy{
		Transport: s.proxies.transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path = "/" + pr.In.PathValue("path")
			pr.Out.URL.RawPath = ""
			pr.Out.Header.Del("Authorization")
			stripCookie(pr.Out.Header, ProxyCookie)
			pr.SetXForwarded()
			// The kernel's own links are relative to where it is served.
			pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
		},
		// Flush at once: a kernel's server-sent events or chunked output
		// must reach the user as it is written.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.WarnContext(r.Context(), "proxy", "session", sk.Session.ID, "port", name, "err", err)
			s.fail(w, r, &apiError{Status: http.StatusBadGateway, Code: codeBadGateway,
				Message: fmt.Sprintf("cannot reach port %s of kernel %s on agent %s", name, port.kernel.ID, port.kernel.Agent)})
		},
	}
	// A proxied stream or websocket may last as long as the kernel serves.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	// An open proxied connection is use of the session for as long as it
	// lasts: a notebook talks to its kernel over one websocket for hours.
	stop := s.touchWhile(r.Context(), sk.Session)
	rp.ServeHTTP(w, r)
	stop()
	return nil
}

// findPort is the port of the session's running kernels named name.
func findPort(sk store.SessionWithKernels, name string) (*servicePort, error) {
	ports := servicePorts(sk)
	for i := range ports {
		if ports[i].name == name {
			return &ports[i], nil
		}
	}
	if sk.Session.Status != domain.SessionRunning {
		return nil, conflict("session %s is %s: its ports are served only while it is RUNNING", sk.Session.ID, sk.Session.Status)
	}
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = p.name
	}
	return nil, notFound("session %s serves no port %q (it serves: %s)", sk.Session.ID, name, orNone(names))
}

// ProxyCookie carries a user's token to one session port's proxy path,
// for a browser: a link the user opens cannot send an Authorization
// header, and the dashboard holds its token where only its own script
// reads it. The cookie is set by POST /v1/sessions/{id}/proxy-cookie/{port}
// (which itself takes the header), for that port's path alone; HttpOnly,
// so the kernel's pages, served from the manager's origin, cannot read
// it; SameSite=Strict, so no other site's page can make the browser
// send it; accepted by the session proxy and by nothing else, and taken
// out of what the kernel is sent.
const ProxyCookie = "sokovan_proxy"

// proxyCookieAge bounds how long a browser keeps it: a working day of a
// notebook, not for ever.
const proxyCookieAge = 12 * time.Hour

func (s *Server) proxyCookie(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	port, err := findPort(sk, r.PathValue("port"))
	if err != nil {
		return err
	}
	token, _ := bearer(r) // authorize let the request in with it
	path := proxyPath(sk.Session.ID, port.name)
	http.SetCookie(w, &http.Cookie{Name: ProxyCookie, Value: token, Path: path, MaxAge: int(proxyCookieAge / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, v1.ServicePort{Name: port.name, Protocol: port.Protocol, Kernel: string(port.kernel.ID),
		Host: port.Host, Port: port.Port, ProxyPath: path})
	return nil
}

// cookieBearer lets a request without an Authorization header use the
// ProxyCookie's token as if it had come in one; the session proxy is the
// only route it wraps.
func cookieBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			if c, err := r.Cookie(ProxyCookie); err == nil && c.Value != "" {
				r = r.Clone(r.Context())
				r.Header.Set("Authorization", "Bearer "+c.Value)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// stripCookie takes the cookie name out of h, keeping the kernel's own.
func stripCookie(h http.Header, name string) {
	var keep []string
	for _, line := range h.Values("Cookie") {
		for _, part := range strings.Split(line, ";") {
			part = strings.TrimSpace(part)
			if n, _, _ := strings.Cut(part, "="); part == "" || n == name {
				continue
			}
			keep = append(keep, part)
		}
	}
	h.Del("Cookie")
	if len(keep) > 0 {
		h.Set("Cookie", strings.Join(keep, "; "))
	}
}

// dialHost is where the manager reaches a port (domain.DialHost's rule):
// where the runtime bound it, unless it bound every address, in which case
// the agent's own host; never this host's loopback for a remote agent.
func (s *Server) dialHost(r *http.Request, p *servicePort) (string, error) {
	if host, ok := p.DirectHost(); ok {
		return host, nil
	}
	a, err := s.store.GetAgent(r.Context(), p.kernel.Agent)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", notFound("agent %s of kernel %s is gone", p.kernel.Agent, p.kernel.ID)
		}
		return "", err
	}
	host, err := domain.DialHost(p.ServicePort, a.Address)
	switch {
	case errors.Is(err, domain.ErrLoopbackOnly):
		return "", &apiError{Status: http.StatusBadGateway, Code: codeBadGateway,
			Message: fmt.Sprintf("kernel %s serves port %s on agent %s's loopback only; it cannot be reached from the manager",
				p.kernel.ID, p.Name, a.ID)}
	case err != nil:
		return "", &apiError{Status: http.StatusBadGateway, Code: codeBadGateway,
			Message: fmt.Sprintf("agent %s has no usable address", a.ID)}
	}
	return host, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
