package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// kernelServer stands in for what a kernel serves: /stream writes a line,
// then waits for /release before the second; an Upgrade request is
// switched to a raw echo of what the client sends, as a websocket is.
type kernelServer struct {
	release chan struct{}
	auth    chan string
}

func (k *kernelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case k.auth <- r.Header.Get("Authorization"):
	default:
	}
	switch {
	case r.Header.Get("Upgrade") == "echo":
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		fmt.Fprint(rw, "echo: "+line)
		_ = rw.Flush()
	case r.URL.Path == "/stream":
		fmt.Fprintln(w, "first")
		_ = http.NewResponseController(w).Flush()
		<-k.release
		fmt.Fprintln(w, "second")
	default:
		fmt.Fprintf(w, "path %s\n", r.URL.RequestURI())
	}
}

// serveKernel serves h on a loopback port for the test's life, as a
// kernel's service port, and returns the port.
func serveKernel(t *testing.T, h http.Handler) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestProxy: a RUNNING session's service port is proxied to its owner and
// to admins, streaming as the kernel writes and switching protocols on an
// upgrade, without the caller's token; anyone else gets 404.
func TestProxy(t *testing.T) {
	t.Parallel()
	k := &kernelServer{release: make(chan struct{}), auth: make(chan string, 16)}
	port := serveKernel(t, k)
	m := apitest.New(t, apitest.Options{ServicePorts: []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: port}}})
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
	s = waitStatus(t, m, alice, s.ID, "RUNNING")
	if len(s.ServicePorts) != 1 || s.ServicePorts[0].Port != port || s.ServicePorts[0].Kernel != s.Kernels[0].ID {
		t.Fatalf("service_ports = %+v", s.ServicePorts)
	}
	base := m.URL + s.ServicePorts[0].ProxyPath

	do := func(token, method, url string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, tc := range []struct {
		name, token, path string
		want              int
	}{
		{"owner", alice, "a/b?c=d", http.StatusOK},
		{"admin", m.AdminToken, "", http.StatusOK},
		{"another user", bob, "", http.StatusNotFound},
	} {
		resp := do(tc.token, "GET", base+tc.path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.want)
		}
		if tc.want == http.StatusOK && string(body) != "path /"+tc.path+"\n" {
			t.Errorf("%s: the kernel saw %q", tc.name, body)
		}
	}
	for len(k.auth) > 0 {
		if a := <-k.auth; a != "" {
			t.Errorf("the kernel was given Authorization %q", a)
		}
	}
	if resp := do(alice, "GET", m.URL+"/v1/sessions/"+s.ID+"/proxy/nope/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown port: %d, want 404", resp.StatusCode)
	}

	// Streaming: the first line arrives while the kernel still holds the
	// second.
	resp := do(alice, "GET", base+"stream")
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("first streamed line: %q %v", line, err)
	}
	close(k.release)
	if rest, _ := io.ReadAll(br); string(rest) != "second\n" {
		t.Errorf("rest of the stream: %q", rest)
	}
	resp.Body.Close()

	// An upgrade is tunnelled both ways.
	conn, err := net.Dial("tcp", strings.TrimPrefix(m.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n",
		s.ServicePorts[0].ProxyPath, alice)
	cr := bufio.NewReader(conn)
	up, err := http.ReadResponse(cr, nil)
	if err != nil || up.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", up, err)
	}
	fmt.Fprint(conn, "ping\n")
	if line, err := cr.ReadString('\n'); err != nil || line != "echo: ping\n" {
		t.Errorf("through the upgraded connection: %q %v", line, err)
	}

	// A port on the loopback of an agent on another host is not dialled:
	// from the manager it would be the manager's own loopback.
	agent, err := m.Store.GetAgent(t.Context(), domain.AgentID(s.Kernels[0].Agent))
	if err != nil {
		t.Fatal(err)
	}
	local := agent.Address
	agent.Address = "http://10.255.0.7:6001"
	if _, err := m.Store.RegisterAgent(t.Context(), agent, time.Now()); err != nil {
		t.Fatal(err)
	}
	if resp := do(alice, "GET", base); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("loopback port of a remote agent: %d, want 502", resp.StatusCode)
	}
	agent.Address = local
	if _, err := m.Store.RegisterAgent(t.Context(), agent, time.Now()); err != nil {
		t.Fatal(err)
	}

	// Once the session ends its port is gone: 409 names why.
	if code := m.Do(alice, "DELETE", "/v1/sessions/"+s.ID, nil, nil); code != http.StatusAccepted {
		t.Fatalf("delete: %d", code)
	}
	waitStatus(t, m, alice, s.ID, "TERMINATED")
	if resp := do(alice, "GET", base); resp.StatusCode != http.StatusConflict {
		t.Errorf("after the end: %d, want 409", resp.StatusCode)
	}
}

// TestProxyCookie: the cookie POST …/proxy-cookie/{port} sets opens that
// port's proxy for a browser, which cannot send the header: it holds the
// caller's token for the port's path alone, HttpOnly and SameSite=Strict;
// the proxy takes it under the same rules as the header and gives the
// kernel the request's other cookies but not that one; no other route
// reads it.
func TestProxyCookie(t *testing.T) {
	t.Parallel()
	seen := make(chan http.Header, 16)
	kernel := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		fmt.Fprintf(w, "path %s\n", r.URL.Path)
	})
	port := serveKernel(t, kernel)
	m := apitest.New(t, apitest.Options{ServicePorts: []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: port}}})
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
	s = waitStatus(t, m, alice, s.ID, "RUNNING")
	pp := s.ServicePorts[0].ProxyPath

	send := func(method, path string, header http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, m.URL+path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	cookie := func(v string) http.Header { return http.Header{"Cookie": {v}} }

	if resp := send("POST", "/v1/sessions/"+s.ID+"/proxy-cookie/http", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", resp.StatusCode)
	}
	if resp := send("POST", "/v1/sessions/"+s.ID+"/proxy-cookie/nope", bearer(alice)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown port: %d, want 404", resp.StatusCode)
	}
	if resp := send("POST", "/v1/sessions/"+s.ID+"/proxy-cookie/http", bearer(bob)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another user's session: %d, want 404", resp.StatusCode)
	}
	resp := send("POST", "/v1/sessions/"+s.ID+"/proxy-cookie/http", bearer(alice))
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 {
		t.Fatalf("proxy-cookie: %d, cookies %v", resp.StatusCode, resp.Header.Values("Set-Cookie"))
	}
	c := resp.Cookies()[0]
	if c.Name != "sokovan_proxy" || c.Value != alice || c.Path != pp || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode ||
		c.MaxAge <= 0 || c.Domain != "" {
		t.Errorf("cookie %+v; want alice's token for %s only, HttpOnly, SameSite=Strict, expiring", c, pp)
	}

	// The proxy takes it, and the kernel gets the other cookies only.
	resp = send("GET", pp+"x", cookie("theirs=1; sokovan_proxy="+alice+"; more=2"))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "path /x\n" {
		t.Fatalf("proxy with the cookie: %d %s", resp.StatusCode, body)
	}
	h := <-seen
	if got := h.Get("Cookie"); got != "theirs=1; more=2" || h.Get("Authorization") != "" {
		t.Errorf("the kernel was sent Cookie %q, Authorization %q; want its own cookies only", got, h.Get("Authorization"))
	}
	// The same rules as the header: another user's token is 404, a
	// made-up one 401.
	if resp := send("GET", pp, cookie("sokovan_proxy="+bob)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob's cookie: %d, want 404", resp.StatusCode)
	}
	if resp := send("GET", pp, cookie("sokovan_proxy=skv_madeup")); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a made-up cookie: %d, want 401", resp.StatusCode)
	}
	// Nothing else reads it.
	for _, path := range []string{"/v1/sessions/" + s.ID, "/v1/me", "/v1/sessions/" + s.ID + "/proxy-cookie/http"} {
		method := "GET"
		if strings.Contains(path, "proxy-cookie") {
			method = "POST"
		}
		if resp := send(method, path, cookie("sokovan_proxy="+alice)); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s with only the cookie: %d, want 401", method, path, resp.StatusCode)
		}
	}

	// Once the session ends there is no port to open.
	if code := m.Do(alice, "DELETE", "/v1/sessions/"+s.ID, nil, nil); code != http.StatusAccepted {
		t.Fatalf("delete: %d", code)
	}
	waitStatus(t, m, alice, s.ID, "TERMINATED")
	if resp := send("POST", "/v1/sessions/"+s.ID+"/proxy-cookie/http", bearer(alice)); resp.StatusCode != http.StatusConflict {
		t.Errorf("after the end: %d, want 409", resp.StatusCode)
	}
}

// TestProxyConnectionsAreBounded is issue 28's probe: one user holding
// many slow requests through the session proxy exhausted the manager's
// descriptors. A user, and a session, may hold only so many at once; the
// rest of the API goes on answering, and a connection's end frees its
// place.
func TestProxyConnectionsAreBounded(t *testing.T) {
	t.Parallel()
	k := &kernelServer{release: make(chan struct{}), auth: make(chan string, 64)}
	port := serveKernel(t, k)
	m := apitest.New(t, apitest.Options{API: api.Config{MaxProxyPerUser: 2, MaxProxyPerSession: 3},
		ServicePorts: []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: port}}})
	alice := m.User("alice", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
	s = waitStatus(t, m, alice, s.ID, "RUNNING")
	stream := m.URL + s.ServicePorts[0].ProxyPath + "stream"
	// open holds a /stream request until the kernel's release; it returns
	// the status and, for a 200, the body to close.
	open := func(token string) (int, string, io.ReadCloser) {
		t.Helper()
		req, _ := http.NewRequest("GET", stream, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(body), nil
		}
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		if line != "first\n" {
			t.Fatalf("stream began %q", line)
		}
		return resp.StatusCode, "", resp.Body
	}
	var held []io.ReadCloser
	for range 2 {
		_, _, b := open(alice)
		held = append(held, b)
	}
	if code, body, _ := open(alice); code != http.StatusTooManyRequests || !strings.Contains(body, "user alice holds 2 proxied connections") {
		t.Fatalf("alice's third: %d %s, want 429 naming her bound", code, body)
	}
	_, _, b := open(m.AdminToken) // the session's third
	held = append(held, b)
	if code, body, _ := open(m.AdminToken); code != http.StatusTooManyRequests || !strings.Contains(body, "has 3 proxied connections open") {
		t.Fatalf("the session's fourth: %d %s, want 429 naming the session's bound", code, body)
	}
	if code, raw := m.Raw("", "GET", "/readyz", nil); code != http.StatusOK {
		t.Fatalf("/readyz while the proxy is full: %d %s", code, raw)
	}
	if code := m.Do(alice, "GET", "/v1/sessions/"+s.ID, nil, nil); code != http.StatusOK {
		t.Fatalf("alice's API while her proxy bound is reached: %d", code)
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _, b := open(alice)
		if code == http.StatusOK {
			b.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's place was not freed when her connection ended: %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, b := range held[1:] {
		b.Close()
	}
	close(k.release)
}
