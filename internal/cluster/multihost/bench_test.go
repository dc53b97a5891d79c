package multihost_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/store/pgtest"
)

// BenchmarkAcrossHosts measures over the namespaces what the one-host
// benchmarks measure on loopback: a manager on one host, two process
// agents on two more, PostgreSQL reached over the bridge. It reports
// submit → RUNNING for sessions submitted one at a time (each polled every
// 5 ms through the API), with agents joined by a join token and TLS
// throughout as a cluster runs by default, and a request's round trip to an http-echo on a
// remote agent, straight to the kernel's address and through the
// manager's session proxy, whose difference is the proxy's cost across
// hosts.
//
//	go test -run '^$' -bench AcrossHosts -benchtime 1x ./internal/cluster/multihost/
func BenchmarkAcrossHosts(b *testing.B) {
	c := newCluster(b)
	dsn := pgtest.NewDatabase(b)
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	u.Host = c.forward(u.Host)
	m := c.addHost("m1", 11)
	agents := []*host{c.addHost("a1", 21), c.addHost("a2", 22)}
	// The production default: agent identities from a join token, TLS
	// between manager and agents and to the API.
	caFile := filepath.Join(c.dir, "m1-ca.pem")
	c.run(m, []string{"SOKOVAN_ADMIN_TOKEN=" + adminToken}, "server", "--db", u.String(), "--listen", m.ip+":8470",
		"--cluster-ca-out", caFile, "--cycle-interval", "1s")
	eventually(b, 60*time.Second, "the cluster CA", func() (bool, string) {
		if gone := c.exited(); gone != "" {
			b.Fatalf("exited: %s", gone)
		}
		_, err := os.Stat(caFile)
		return err == nil, fmt.Sprint(err)
	})
	useClusterCA(b, caFile)
	a := api{b, "https://" + m.ip + ":8470"}
	eventually(b, 60*time.Second, "the manager ready", func() (bool, string) {
		code, raw := a.do("GET", "/readyz", nil)
		return code == 200, fmt.Sprintf("%d %s", code, raw)
	})
	var join v1.AgentToken
	a.decode("POST", "/v1/agent-tokens", map[string]any{"ttl": "1h", "uses": len(agents)}, &join, 201)
	for i, ag := range agents {
		first := 3100000000 + i*10000
		c.run(ag, nil, "agent", "run", "--id", ag.name, "--runtime", "process", "--manager", a.base,
			"--join-token", join.Token, "--ca", caFile, "--cpu", "64", "--mem", "64g",
			"--kernel-uids", fmt.Sprintf("%d-%d", first, first+999), "--data-dir", c.dir+"/"+ag.name)
	}
	eventually(b, 60*time.Second, "2 agents ALIVE", func() (bool, string) {
		code, raw := a.do("GET", "/v1/agents", nil)
		var list struct{ Items []v1.Agent }
		if code != 200 || json.Unmarshal(raw, &list) != nil {
			return false, fmt.Sprintf("%d %s", code, raw)
		}
		alive := 0
		for _, ag := range list.Items {
			if ag.Status == "ALIVE" {
				alive++
			}
		}
		return alive == 2, string(raw)
	})
	res := map[string]string{"cpu": "0.1", "mem": "64m"}
	echoID := a.create(map[string]any{"image": "http-echo", "resources": res, "designated_agents": []string{"a2"}})
	s := a.waitStatus(echoID, 60*time.Second, "RUNNING")
	direct := "http://" + s.ServicePorts[0].Host + ":" + strconv.Itoa(s.ServicePorts[0].Port) + "/hello"
	proxied := a.base + "/v1/sessions/" + echoID + "/proxy/http/hello"

	const starts, requests = 40, 500
	var toRunning, viaDirect, viaProxy []time.Duration
	for b.Loop() {
		for i := range starts {
			t0 := time.Now()
			id := a.create(map[string]any{"image": "sleep", "resources": res,
				"designated_agents": []string{agents[i%2].name}})
			for {
				var got v1.Session
				a.decode("GET", "/v1/sessions/"+id, nil, &got, 200)
				if got.Status == "RUNNING" {
					break
				}
				if time.Since(t0) > time.Minute {
					b.Fatalf("session %s is %s after a minute", id, got.Status)
				}
				time.Sleep(5 * time.Millisecond)
			}
			toRunning = append(toRunning, time.Since(t0))
			a.endAll(id)
		}
		hc := &http.Client{Timeout: 5 * time.Second, Transport: managerTransport}
		get := func(u string, auth bool) time.Duration {
			req, _ := http.NewRequest("GET", u, nil)
			if auth {
				req.Header.Set("Authorization", "Bearer "+adminToken)
			}
			t0 := time.Now()
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("GET %s: %d", u, resp.StatusCode)
			}
			return time.Since(t0)
		}
		for range requests {
			viaDirect = append(viaDirect, get(direct, false))
			viaProxy = append(viaProxy, get(proxied, true))
		}
	}
	q := func(d []time.Duration, p float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(q(toRunning, 0.5)), "start-p50-ms")
	b.ReportMetric(ms(q(toRunning, 0.99)), "start-p99-ms")
	b.ReportMetric(ms(q(viaDirect, 0.5)), "direct-p50-ms")
	b.ReportMetric(ms(q(viaProxy, 0.5)), "proxy-p50-ms")
	b.ReportMetric(ms(q(viaProxy, 0.99)), "proxy-p99-ms")
	b.Logf("across hosts: submit→RUNNING p50 %v p99 %v (%d sessions); GET direct p50 %v p99 %v, through the proxy p50 %v p99 %v (%d each)",
		q(toRunning, 0.5), q(toRunning, 0.99), len(toRunning), q(viaDirect, 0.5), q(viaDirect, 0.99),
		q(viaProxy, 0.5), q(viaProxy, 0.99), len(viaDirect))
}
