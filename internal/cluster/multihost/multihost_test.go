package multihost_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/pki"
	"github.com/sokovan-go/sokovan/internal/store/pgtest"
)

const (
	adminToken = "mh-admin-token-0123456789"
	// The managers' bounds, short so the faults play out in seconds:
	// an agent silent for heartbeatTimeout is LOST, and its kernels are
	// ended lostGrace later. The etcd election's lease is 5 s
	// (docs/OPERATIONS.md), which bounds a takeover.
	heartbeatTimeout = 5 * time.Second
	lostGrace        = 3 * time.Second
	leaseBound       = 5 * time.Second
)

// need skips the test with why, or fails it where CI=true: CI runs as
// root with iproute2, PostgreSQL, Redis and etcd, and must run it.
func need(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("multi-host test cannot run (CI=true: required): %s", why)
	}
	t.Skip("multi-host test: " + why)
}

// cluster is the test's hosts: the root namespace holds the bridge
// (address .1, the "database host" where PostgreSQL, Redis and etcd are
// reached), and each sokovan process runs in a namespace of its own.
type cluster struct {
	t      testing.TB
	id     string // unique per run: in every name the test creates
	subnet string // "10.77.N."
	bridge string
	bin    string
	dir    string
	hosts  map[string]*host
	mu     sync.Mutex
	procs  []*proc
}

// proc is a started process; done closes once it has exited.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

type host struct {
	name, ns, ip string
	vethBr       string // the bridge side: down cuts the host off
	cmd          *exec.Cmd
	proc         *proc
}

func ipcmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func newCluster(t testing.TB) *cluster {
	if os.Geteuid() != 0 {
		need(t, "needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		need(t, "needs iproute2's ip")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)[:5]
	c := &cluster{t: t, id: id, bridge: "mhbr" + id, hosts: map[string]*host{}}
	// A /24 of 10.77/16 no interface of this machine is in yet.
	out, _ := exec.Command("ip", "-o", "addr").Output()
	for n := int(b[2])%200 + 20; ; n++ {
		s := fmt.Sprintf("10.77.%d.", n)
		if !strings.Contains(string(out), s) {
			c.subnet = s
			break
		}
	}
	if err := ipcmd("netns", "add", "mh"+id+"probe"); err != nil {
		need(t, "cannot create a network namespace: "+err.Error())
	}
	_ = ipcmd("netns", "del", "mh"+id+"probe")
	t.Cleanup(c.teardown)
	for _, args := range [][]string{
		{"link", "add", c.bridge, "type", "bridge"},
		{"addr", "add", c.subnet + "1/24", "dev", c.bridge},
		{"link", "set", c.bridge, "up"},
	} {
		if err := ipcmd(args...); err != nil {
			t.Fatal(err)
		}
	}
	// The binary, where kernels' own users may run it (http-echo is the
	// binary itself), and the agents' data directories.
	dir, err := os.MkdirTemp("", "sokovan-mh-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c.bin = filepath.Join(dir, "sokovan")
	if out, err := exec.Command("go", "build", "-o", c.bin, "github.com/sokovan-go/sokovan/cmd/sokovan").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return c
}

// addHost creates namespace, veth pair and address for a host at .last.
func (c *cluster) addHost(name string, last int) *host {
	c.t.Helper()
	h := &host{name: name, ns: "mh" + c.id + name, ip: fmt.Sprintf("%s%d", c.subnet, last),
		vethBr: "mh" + c.id + name + "b"}
	in := "mh" + c.id + name + "h"
	for _, args := range [][]string{
		{"netns", "add", h.ns},
		{"link", "add", in, "type", "veth", "peer", "name", h.vethBr},
		{"link", "set", in, "netns", h.ns},
		{"link", "set", h.vethBr, "master", c.bridge},
		{"link", "set", h.vethBr, "up"},
		{"-n", h.ns, "addr", "add", h.ip + "/24", "dev", in},
		{"-n", h.ns, "link", "set", in, "up"},
		{"-n", h.ns, "link", "set", "lo", "up"},
	} {
		if err := ipcmd(args...); err != nil {
			c.t.Fatal(err)
		}
	}
	c.hosts[name] = h
	return h
}

// run starts the sokovan binary in h's namespace, logging to DIR/NAME.log.
func (c *cluster) run(h *host, env []string, args ...string) *exec.Cmd {
	c.t.Helper()
	f, err := os.Create(filepath.Join(c.dir, h.name+".log"))
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.ns, c.bin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p := &proc{name: h.name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	h.cmd, h.proc = cmd, p
	return cmd
}

// exited names the processes that have ended, which none should have.
func (c *cluster) exited() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.procs {
		select {
		case <-p.done:
			out = append(out, p.name)
		default:
		}
	}
	return strings.Join(out, ", ")
}

// cut takes h's link to the bridge down (up again with restore).
func (c *cluster) cut(h *host) {
	c.t.Helper()
	if err := ipcmd("link", "set", h.vethBr, "down"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) restore(h *host) {
	c.t.Helper()
	if err := ipcmd("link", "set", h.vethBr, "up"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) teardown() {
	c.mu.Lock()
	procs := c.procs
	c.mu.Unlock()
	if c.t.Failed() {
		// Each process's goroutines, into its log, for what it waited on.
		for _, p := range procs {
			_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// SIGTERM first, so agents stop their kernels; then what is left.
	for _, p := range procs {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	}
	deadline := time.After(10 * time.Second)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			for _, p := range procs {
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}
			<-p.done
		}
	}
	for _, h := range c.hosts {
		_ = ipcmd("netns", "del", h.ns) // takes its end of the veth pair along
		_ = ipcmd("link", "del", h.vethBr)
	}
	_ = ipcmd("link", "del", c.bridge)
	if c.t.Failed() {
		for _, h := range c.hosts {
			if raw, err := os.ReadFile(filepath.Join(c.dir, h.name+".log")); err == nil {
				c.t.Logf("---- %s (%s) log, last 4000 bytes:\n%s", h.name, h.ip, tail(raw, 4000))
			}
		}
	}
	if c.t.Failed() && c.dir != "" {
		// The logs outlive a failed run, for reading whole.
		_ = os.Remove(c.bin)
		c.t.Logf("logs kept in %s", c.dir)
	} else if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// forward serves target (a service on this machine's loopback) on the
// bridge address: PostgreSQL, Redis and etcd here listen on 127.0.0.1
// only, which no other namespace reaches, and the test must not rebind
// shared services. The forwarder is the "database host"'s interface; a
// host whose link is cut loses it like a real network would.
func (c *cluster) forward(target string) string {
	c.t.Helper()
	_, port, err := net.SplitHostPort(target)
	if err != nil {
		c.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(c.subnet+"1", port))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return ln.Addr().String()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// api is one manager's API with the admin token.
type api struct {
	t    testing.TB
	base string
}

func (a api) do(method, path string, body any) (int, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, a.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	hc := http.Client{Timeout: 10 * time.Second, Transport: managerTransport}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (a api) decode(method, path string, body, out any, want int) {
	a.t.Helper()
	code, raw := a.do(method, path, body)
	if code != want {
		a.t.Fatalf("%s %s%s: %d %s, want %d", method, a.base, path, code, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

func (a api) session(id string) v1.Session {
	a.t.Helper()
	var s v1.Session
	a.decode("GET", "/v1/sessions/"+id, nil, &s, 200)
	return s
}

func (a api) create(body map[string]any) string {
	a.t.Helper()
	var s v1.Session
	a.decode("POST", "/v1/sessions", body, &s, 201)
	return s.ID
}

// eventually polls cond every 200 ms until it is true or within passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for {
		ok, note := cond()
		if ok {
			return
		}
		last = note
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, within, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (a api) waitStatus(id string, within time.Duration, want ...string) v1.Session {
	a.t.Helper()
	var s v1.Session
	eventually(a.t, within, "session "+id+" "+strings.Join(want, "/"), func() (bool, string) {
		s = a.session(id)
		return slices.Contains(want, s.Status), s.Status + " " + s.StatusReason
	})
	return s
}

func (a api) endAll(ids ...string) {
	a.t.Helper()
	for _, id := range ids {
		a.do("DELETE", "/v1/sessions/"+id, nil)
	}
	for _, id := range ids {
		a.waitStatus(id, 30*time.Second, "TERMINATED", "CANCELLED", "ERROR")
	}
}

// useClusterCA makes the test's calls to the managers trust the cluster
// CA in file, which they serve their certificates of.
func useClusterCA(t testing.TB, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.CACert(b)
	if err != nil {
		t.Fatal(err)
	}
	managerTransport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
}

// agentRPCTLS calls agents with the test's manager certificate.
var agentRPCTLS *tls.Config

// managerCertificate gives the test a manager's certificate of the
// cluster CA, signed with the CA's key as the managers keep it in the
// store, and writes it (test-manager.pem, .key) to dir for curl: agents
// answer only managers.
func managerCertificate(t testing.TB, dsn, dir string) *tls.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var certPEM, keyPEM string
	if err := conn.QueryRow(ctx, "SELECT cert_pem, key_pem FROM cluster_ca").Scan(&certPEM, &keyPEM); err != nil {
		t.Fatalf("the cluster CA in the store: %v", err)
	}
	ca, err := pki.LoadCA([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	c, k, err := ca.Issue(pki.Identity{Role: pki.RoleManager, ID: "multihost-test"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := pki.NewKeypair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"test-manager.pem": c, "test-manager.key": k} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	agentRPCTLS = pki.ClientConfig(ca, pair, pki.Peer{Role: pki.RoleAgent})
	return agentRPCTLS
}

// managerTransport trusts the cluster CA the managers serve with (set
// once it is known; nil, the default transport, until then).
var managerTransport http.RoundTripper

// echo GETs url with the admin token and decodes http-echo's answer.
func echo(t testing.TB, u string) (map[string]any, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	hc := http.Client{Timeout: 5 * time.Second, Transport: managerTransport}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("GET %s: %v: %s", u, err, raw)
	}
	return out, nil
}

func remoteHost(m map[string]any) string {
	s, _ := m["remote_addr"].(string)
	h, _, _ := net.SplitHostPort(s)
	return h
}

// TestMultiHost: PostgreSQL, Redis and etcd on one host, two managers on
// two more, three process agents on three more, every host its own
// network namespace and address; nothing listens on a loopback another
// host could use. Through either manager's API: a session runs on a
// remote agent; a two-host multi-node session's kernels reach each other
// by their cluster hostnames; the session proxy and port-forward reach an
// http-echo on a remote host; a deployment of 3 replicas over the three
// agents serves through both managers' proxies; a gang of 3 starts spread
// over the hosts. Then the faults: an agent host cut off is LOST and its
// session ended, and when the link returns its kernel is destroyed, not
// run twice; the lease holder cut off is replaced within the lease bound,
// and no session is lost.
func TestMultiHost(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-host test: real processes, minutes")
	}
	c := newCluster(t)
	dsn := pgtest.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = c.forward(u.Host)
	rootDSN := dsn
	dsn = u.String()
	ru, err := url.Parse(envOr("SOKOVAN_TEST_REDIS", "redis://127.0.0.1:6379/0"))
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", ru.Host, 2*time.Second); err != nil {
		need(t, "Redis unreachable: "+err.Error())
	} else {
		conn.Close()
	}
	ru.Host = c.forward(ru.Host)
	etcdTarget := envOr("SOKOVAN_TEST_ETCD", "127.0.0.1:2379")
	if conn, err := net.DialTimeout("tcp", etcdTarget, 2*time.Second); err != nil {
		need(t, "etcd unreachable: "+err.Error())
	} else {
		conn.Close()
	}
	etcdAddr := c.forward(etcdTarget)
	cfgKey := "/sokovan-mh/" + c.id + "/config"

	m1, m2 := c.addHost("m1", 11), c.addHost("m2", 12)
	agents := []*host{c.addHost("a1", 21), c.addHost("a2", 22), c.addHost("a3", 23)}
	env := []string{"SOKOVAN_ADMIN_TOKEN=" + adminToken}
	for _, m := range []*host{m1, m2} {
		// Agent identities, the default: no shared token.
		c.run(m, env, "server", "--db", dsn, "--listen", m.ip+":8470", "--cluster-ca-out", filepath.Join(c.dir, m.name+"-ca.pem"),
			"--events", ru.String(), "--events-stream", "sokovan-mh-"+c.id, "--config", "etcd://"+etcdAddr+cfgKey,
			"--cycle-interval", "200ms", "--sweep-interval", "500ms",
			"--heartbeat-timeout", heartbeatTimeout.String(), "--lost-grace", lostGrace.String())
	}
	managers := "https://" + m1.ip + ":8470,https://" + m2.ip + ":8470"
	api1, api2 := api{t, "https://" + m1.ip + ":8470"}, api{t, "https://" + m2.ip + ":8470"}
	apis := []api{api1, api2}
	caFile := filepath.Join(c.dir, "m1-ca.pem")
	eventually(t, 60*time.Second, "m1's cluster CA", func() (bool, string) {
		if gone := c.exited(); gone != "" {
			t.Fatalf("exited: %s", gone)
		}
		_, err := os.Stat(caFile)
		return err == nil, fmt.Sprint(err)
	})
	useClusterCA(t, caFile)
	for _, a := range apis {
		eventually(t, 60*time.Second, a.base+" ready", func() (bool, string) {
			if gone := c.exited(); gone != "" {
				t.Fatalf("exited: %s", gone)
			}
			code, raw := a.do("GET", "/readyz", nil)
			return code == 200, fmt.Sprintf("%d %s", code, raw)
		})
	}
	// The agents join with one join token and check the managers, which
	// they reach by IP address, with the cluster CA alone.
	var join v1.AgentToken
	api1.decode("POST", "/v1/agent-tokens", map[string]any{"ttl": "1h", "uses": len(agents)}, &join, 201)
	for i, a := range agents {
		// No --listen, --advertise or --kernel-address: the defaults must
		// find the address that reaches the managers.
		first := 3000000000 + i*10000
		c.run(a, nil, "agent", "run", "--id", a.name, "--runtime", "process", "--manager", managers,
			"--join-token", join.Token, "--ca", caFile, "--cpu", "2", "--mem", "4g", "--heartbeat", "500ms", "--manager-timeout", "1s", "--allow-command",
			"--kernel-uids", fmt.Sprintf("%d-%d", first, first+999), "--data-dir", filepath.Join(c.dir, a.name))
	}
	// The test calls agents as a manager would, with a manager
	// certificate of the cluster CA.
	rpcTLS := managerCertificate(t, rootDSN, c.dir)
	eventually(t, 60*time.Second, "3 agents ALIVE at their own addresses", func() (bool, string) {
		code, raw := api1.do("GET", "/v1/agents", nil)
		var list struct{ Items []v1.Agent }
		if code != 200 || json.Unmarshal(raw, &list) != nil {
			return false, fmt.Sprintf("%d %s", code, raw)
		}
		alive := 0
		for _, a := range list.Items {
			if a.Status == "ALIVE" && a.Address == "https://"+c.hosts[a.ID].ip+":6001" {
				alive++
			}
		}
		if gone := c.exited(); gone != "" {
			t.Fatalf("exited: %s", gone)
		}
		return alive == 3, string(raw)
	})

	// Each kernel asks for more than half an agent (cpu 2), so kernels
	// of one session, job or deployment land on different hosts.
	res := map[string]string{"cpu": "1.5", "mem": "256m"}

	// A session on a remote agent; its port through both managers'
	// proxies and port-forward.
	echoID := api1.create(map[string]any{"name": "echo", "image": "http-echo", "resources": res,
		"designated_agents": []string{"a2"}})
	s := api2.waitStatus(echoID, 60*time.Second, "RUNNING")
	if len(s.Kernels) != 1 || s.Kernels[0].Agent != "a2" {
		t.Fatalf("echo's kernels %+v, want one on a2", s.Kernels)
	}
	if len(s.ServicePorts) != 1 || s.ServicePorts[0].Host != agents[1].ip {
		t.Fatalf("echo's service ports %+v, want one on a2's address %s", s.ServicePorts, agents[1].ip)
	}
	for i, a := range apis {
		var got map[string]any
		eventually(t, 10*time.Second, "proxy through manager "+strconv.Itoa(i+1), func() (bool, string) {
			got, err = echo(t, a.base+"/v1/sessions/"+echoID+"/proxy/http/hello")
			return err == nil, fmt.Sprint(err)
		})
		if want := []*host{m1, m2}[i].ip; remoteHost(got) != want || got["path"] != "/hello" {
			t.Errorf("through manager %d the echo saw %v from %q, want /hello from %s", i+1, got["path"], remoteHost(got), want)
		}
	}
	for i, m := range []*host{m1, m2} {
		port := freePort(t)
		pf := exec.Command(c.bin, "session", "port-forward", echoID, strconv.Itoa(port)+":http")
		pf.Env = append(os.Environ(), "SOKOVAN_ADDR=https://"+m.ip+":8470", "SOKOVAN_TOKEN="+adminToken, "SOKOVAN_CA="+caFile)
		var pfOut bytes.Buffer
		pf.Stdout, pf.Stderr = &pfOut, &pfOut
		if err := pf.Start(); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		eventually(t, 10*time.Second, "port-forward through manager "+strconv.Itoa(i+1), func() (bool, string) {
			got, err = echo(t, fmt.Sprintf("http://127.0.0.1:%d/fwd", port))
			return err == nil, fmt.Sprint(err, " ", pfOut.String())
		})
		_ = pf.Process.Kill()
		_ = pf.Wait()
		if remoteHost(got) != m.ip || got["path"] != "/fwd" {
			t.Errorf("port-forward through %s: echo saw %v from %q", m.name, got["path"], remoteHost(got))
		}
	}
	api1.endAll(echoID)

	// A two-host multi-node session: main1 finds sub1 by its cluster
	// hostname and GETs the http-echo sub1 serves on its own host.
	port := strconv.Itoa(freePort(t))
	script := `set -u
addr_of() { # cluster hostname -> address, from SOKOVAN_CLUSTER_HOSTS/ADDRS
  i=1; for h in $(echo "$SOKOVAN_CLUSTER_HOSTS" | tr , ' '); do
    [ "$h" = "$1" ] && { echo "$SOKOVAN_CLUSTER_ADDRS" | cut -d, -f$i; return; }; i=$((i+1)); done; }
me=$(addr_of "$SOKOVAN_CLUSTER_HOST")
if [ "$SOKOVAN_CLUSTER_ROLE" = sub ]; then exec ` + c.bin + ` __sokovan_http_echo "$me:` + port + `"; fi
peer=$(echo "$SOKOVAN_CLUSTER_HOSTS" | tr , '\n' | grep -v "^$SOKOVAN_CLUSTER_HOST$" | head -1)
for _ in $(seq 100); do
  if out=$(curl -sf "http://$(addr_of "$peer"):` + port + `/from-$SOKOVAN_CLUSTER_HOST"); then echo "REACHED $peer at $(addr_of "$peer"): $out"; exec sleep 1000; fi
  sleep 0.3
done
echo "NEVER REACHED $peer"; exit 1`
	mnID := api2.create(map[string]any{"name": "mn", "image": "sleep", "resources": res, "cluster_mode": "multi-node",
		"cluster_size": 2, "designated_agents": []string{"a1", "a3"}, "command": []string{"sh", "-c", script}})
	s = api1.waitStatus(mnID, 60*time.Second, "RUNNING")
	onAgent := map[string]string{}
	for _, k := range s.Kernels {
		onAgent[fmt.Sprintf("%s%d", k.ClusterRole, k.ClusterIdx)] = k.Agent
	}
	if len(onAgent) != 2 || onAgent["main0"] == onAgent["sub1"] {
		t.Fatalf("multi-node kernels on %v, want two agents", onAgent)
	}
	var logs string
	eventually(t, 40*time.Second, "main0 reaching sub1 by hostname", func() (bool, string) {
		code, raw := api1.do("GET", "/v1/sessions/"+mnID+"/logs?kernel=0", nil)
		logs = string(raw)
		return code == 200 && strings.Contains(logs, "REACHED"), fmt.Sprintf("%d %s", code, raw)
	})
	if want := "REACHED sub1 at " + c.hosts[onAgent["sub1"]].ip; !strings.Contains(logs, want) ||
		!strings.Contains(logs, `"remote_addr":"`+c.hosts[onAgent["main0"]].ip+":") {
		t.Errorf("main0's log %q: want %q, answered from main0's host %s", logs, want, c.hosts[onAgent["main0"]].ip)
	}
	api2.endAll(mnID)

	// A deployment of 3 replicas, one per host, served through both
	// managers' proxies.
	var dep v1.Deployment
	api1.decode("POST", "/v1/deployments", map[string]any{"name": "web", "image": "http-echo", "replicas": 3,
		"resources": res, "health_check": map[string]any{"path": "/health", "interval": "1s", "initial_delay": "1s",
			"timeout": "2s"}}, &dep, 201)
	eventually(t, 90*time.Second, "deployment READY", func() (bool, string) {
		api2.decode("GET", "/v1/deployments/web", nil, &dep, 200)
		return dep.Status == "READY", dep.Status
	})
	routeAgents := map[string]bool{}
	for _, r := range dep.Routes {
		if r.Status == "HEALTHY" {
			routeAgents[api1.session(r.SessionID).Kernels[0].Agent] = true
		}
	}
	if len(routeAgents) != 3 {
		t.Errorf("healthy routes on agents %v, want all three", routeAgents)
	}
	for i, a := range apis {
		seen := map[string]bool{}
		for range 30 {
			got, err := echo(t, a.base+"/v1/deployments/web/proxy/x")
			if err != nil {
				t.Fatalf("deployment proxy through manager %d: %v", i+1, err)
			}
			seen[fmt.Sprint(got["kernel"])] = true
		}
		if len(seen) < 2 {
			t.Errorf("through manager %d, 30 requests reached kernels %v, want them spread", i+1, seen)
		}
	}
	api2.decode("DELETE", "/v1/deployments/web", nil, nil, 202)
	eventually(t, 60*time.Second, "deployment gone", func() (bool, string) {
		code, raw := api1.do("GET", "/v1/deployments/web", nil)
		return code == 404 || strings.Contains(string(raw), `"DESTROYED"`), string(raw)
	})
	eventually(t, 60*time.Second, "agents free", func() (bool, string) { return freeAgents(api1) == 3, "" })

	// A gang of 3: none starts before all are placed, and they spread.
	api1.decode("POST", "/v1/jobs", map[string]any{"name": "gang", "min_available": 3, "permit_timeout": "60s"}, nil, 201)
	var gang []string
	for i := range 3 {
		api := apis[i%2]
		gang = append(gang, api.create(map[string]any{"name": fmt.Sprintf("g%d", i), "image": "sleep",
			"resources": res, "job": "gang"}))
	}
	gangAgents := map[string]bool{}
	for _, id := range gang {
		s := api2.waitStatus(id, 60*time.Second, "RUNNING")
		gangAgents[s.Kernels[0].Agent] = true
	}
	if len(gangAgents) != 3 {
		t.Errorf("gang on agents %v, want three hosts", gangAgents)
	}
	api1.endAll(gang...)
	if t.Failed() {
		return
	}

	// Fault: a3's link cut. Its session's kernel keeps running there,
	// unseen; the managers declare a3 LOST and end the session; when the
	// link returns, a3 registers again and its kernel is destroyed, so the
	// session never runs twice.
	onA3 := api1.create(map[string]any{"name": "on-a3", "image": "sleep", "resources": res, "designated_agents": []string{"a3"}})
	onA1 := api1.create(map[string]any{"name": "on-a1", "image": "sleep", "resources": res, "designated_agents": []string{"a1"}})
	api1.waitStatus(onA3, 60*time.Second, "RUNNING")
	api1.waitStatus(onA1, 60*time.Second, "RUNNING")
	a3 := agents[2]
	a3rpc := agentrpc.NewAgentClient(static{"a3": "https://" + a3.ip + ":6001"}, "")
	a3rpc.UseTLS(rpcTLS)
	c.cut(a3)
	cutAt := time.Now()
	eventually(t, heartbeatTimeout+10*time.Second, "a3 LOST", func() (bool, string) {
		var a v1.Agent
		api2.decode("GET", "/v1/agents/a3", nil, &a, 200)
		return a.Status == "LOST", a.Status
	})
	t.Logf("a3 LOST %v after its link was cut", time.Since(cutAt).Round(100*time.Millisecond))
	ended := api2.waitStatus(onA3, heartbeatTimeout+lostGrace+30*time.Second, "TERMINATED", "ERROR")
	t.Logf("a3's session %s, outcome %q, kernel %s (%s), %v after the cut", ended.Status, ended.Outcome,
		ended.Kernels[0].Status, ended.Kernels[0].StatusReason, time.Since(cutAt).Round(100*time.Millisecond))
	// docs/OPERATIONS.md: a lost agent's running kernels are ERROR after
	// the grace, and their sessions end.
	if ended.Kernels[0].Status != "ERROR" {
		t.Errorf("a3's kernel is %s after a3 was lost, want ERROR", ended.Kernels[0].Status)
	}
	// Meanwhile a3, cut off, still runs the kernel: only it can say so.
	if out := a3.kernelsFromInside(c); !strings.Contains(out, ended.Kernels[0].ID) {
		t.Errorf("a3 (asked from inside its host) runs %s, want the cut-off kernel %s still running", out, ended.Kernels[0].ID)
	}
	c.restore(a3)
	eventually(t, 30*time.Second, "a3 ALIVE again, its old kernel destroyed", func() (bool, string) {
		var a v1.Agent
		api1.decode("GET", "/v1/agents/a3", nil, &a, 200)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ks, err := a3rpc.Kernels(ctx, "a3")
		return a.Status == "ALIVE" && err == nil && len(ks) == 0, fmt.Sprintf("%s, kernels %v %v", a.Status, ks, err)
	})
	if s := api1.session(onA3); s.Status != ended.Status {
		t.Errorf("a3's session went from %s to %s after a3 returned", ended.Status, s.Status)
	}
	if s := api1.session(onA1); s.Status != "RUNNING" {
		t.Errorf("a1's session is %s (%s) after a3's fault, want RUNNING", s.Status, s.StatusReason)
	}

	// Fault: the lease holder cut off. The other manager leads within the
	// lease, runs the handlers (a new session starts through it), and no
	// session is lost.
	leader := leaderOf(t, "http://"+etcdTarget, cfgKey+"/leader")
	var lead, other *host
	var otherAPI api
	for i, m := range []*host{m1, m2} {
		if strings.HasSuffix(leader, "-"+strconv.Itoa(m.cmd.Process.Pid)) {
			lead, other, otherAPI = m, []*host{m2, m1}[i], apis[1-i]
		}
	}
	if lead == nil {
		t.Fatalf("leader %q is neither manager (pids %d, %d)", leader, m1.cmd.Process.Pid, m2.cmd.Process.Pid)
	}
	running := []string{onA1}
	for i, a := range []string{"a2", "a3"} {
		running = append(running, otherAPI.create(map[string]any{"name": fmt.Sprintf("before-%d", i), "image": "sleep",
			"resources": res, "designated_agents": []string{a}}))
	}
	for _, id := range running {
		otherAPI.waitStatus(id, 60*time.Second, "RUNNING")
	}
	c.cut(lead)
	cutAt = time.Now()
	eventually(t, leaseBound+10*time.Second, other.name+" leading", func() (bool, string) {
		l := leaderOf(t, "http://"+etcdTarget, cfgKey+"/leader")
		return strings.HasSuffix(l, "-"+strconv.Itoa(other.cmd.Process.Pid)), l
	})
	took := time.Since(cutAt)
	t.Logf("%s took the lease %v after %s's link was cut", other.name, took.Round(100*time.Millisecond), lead.name)
	if took > leaseBound+2*time.Second {
		t.Errorf("takeover took %v, documented bound %v", took, leaseBound)
	}
	// Free a host's worth for a new session: it starts only if handlers
	// run on the new leader.
	otherAPI.endAll(running[2])
	running = running[:2]
	after := otherAPI.create(map[string]any{"name": "after", "image": "sleep", "resources": res})
	otherAPI.waitStatus(after, 60*time.Second, "RUNNING")
	running = append(running, after)
	// Long enough for any agent that lost its manager to be declared
	// LOST, had it not failed over in time.
	time.Sleep(heartbeatTimeout + time.Second)
	c.restore(lead)
	time.Sleep(2 * time.Second)
	for _, a := range apis {
		checkInvariants(t, a, c, running)
	}
}

// kernelsFromInside asks the agent on h for its kernels from h itself,
// which works while h is cut off.
func (h *host) kernelsFromInside(c *cluster) string {
	// -k: the agent's certificate names no host; what is under test is
	// what it answers, and it answers only a manager's certificate.
	out, err := exec.Command("ip", "netns", "exec", h.ns, "curl", "-s", "-k", "-m", "3", "-X", "POST",
		"--cert", filepath.Join(c.dir, "test-manager.pem"), "--key", filepath.Join(c.dir, "test-manager.key"),
		"-d", "{}", "https://"+h.ip+":6001/rpc/kernels").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("error %v: %s", err, out)
	}
	return string(out)
}

type static map[domain.AgentID]string

func (s static) GetAgent(_ context.Context, id domain.AgentID) (domain.Agent, error) {
	return domain.Agent{ID: id, Address: s[id]}, nil
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func freeAgents(a api) int {
	code, raw := a.do("GET", "/v1/agents", nil)
	var list struct{ Items []v1.Agent }
	if code != 200 || json.Unmarshal(raw, &list) != nil {
		return -1
	}
	n := 0
	for _, ag := range list.Items {
		if ag.Status == "ALIVE" && ag.KernelCount == 0 {
			n++
		}
	}
	return n
}

// leaderOf is the etcd election's leader: the key under prefix created
// first (etcd's concurrency.Election).
func leaderOf(t *testing.T, endpoint, prefix string) string {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return fmt.Sprintf("no leader (%v)", err)
	}
	return string(resp.Kvs[0].Value)
}

// checkInvariants: every session in want is RUNNING with its kernel
// really running on its agent; every agent's kernel count is its live
// kernels; no kernel is on two agents.
func checkInvariants(t *testing.T, a api, c *cluster, want []string) {
	t.Helper()
	var list struct{ Items []v1.Session }
	a.decode("GET", "/v1/sessions?limit=1000", nil, &list, 200)
	live := map[string]int{}
	where := map[string]string{}
	for _, s := range list.Items {
		for _, k := range s.Kernels {
			if slices.Contains([]string{"SCHEDULED", "PREPARING", "PULLING", "PREPARED", "CREATING", "RUNNING", "TERMINATING"}, k.Status) {
				live[k.Agent]++
				where[k.ID] = k.Agent
			}
		}
	}
	for _, id := range want {
		s := a.session(id)
		if s.Status != "RUNNING" {
			t.Errorf("%s: session %s is %s (%s), want RUNNING", a.base, s.Name, s.Status, s.StatusReason)
		}
	}
	var agents struct{ Items []v1.Agent }
	a.decode("GET", "/v1/agents", nil, &agents, 200)
	seen := map[string]string{}
	for _, ag := range agents.Items {
		if ag.KernelCount != live[ag.ID] {
			t.Errorf("%s: agent %s counts %d kernels, sessions show %d live there", a.base, ag.ID, ag.KernelCount, live[ag.ID])
		}
		rpc := agentrpc.NewAgentClient(static{domain.AgentID(ag.ID): "https://" + c.hosts[ag.ID].ip + ":6001"}, "")
		rpc.UseTLS(agentRPCTLS)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		ks, err := rpc.Kernels(ctx, domain.AgentID(ag.ID))
		cancel()
		if err != nil {
			t.Errorf("agent %s: %v", ag.ID, err)
			continue
		}
		for _, k := range ks {
			if prev, ok := seen[string(k.ID)]; ok {
				t.Errorf("kernel %s runs on %s and %s", k.ID, prev, ag.ID)
			}
			seen[string(k.ID)] = ag.ID
			if where[string(k.ID)] != ag.ID {
				t.Errorf("agent %s runs kernel %s, which the manager has on %q", ag.ID, k.ID, where[string(k.ID)])
			}
		}
	}
	for k, ag := range where {
		if seen[k] != ag {
			t.Errorf("kernel %s is live on %s for the manager but that agent does not run it", k, ag)
		}
	}
}
