package deploy_test

import (
	"io"
	"net/http"
	"runtime"
	"slices"
	"testing"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// BenchmarkProxyOverhead measures what the deployment proxy adds on
// loopback: the same GET sent to an http-echo route directly and through
// /v1/deployments/{id}/proxy/ (token auth, route table, least-in-flight
// choice, reverse proxy), one at a time, for the median added latency;
// then concurrent GETs through the proxy with this process held to one
// core (the manager and the client share it; the echo server is another
// process), for requests per second per core.
//
//	go test ./internal/deploy -run '^$' -bench ProxyOverhead -benchtime 2000x
func BenchmarkProxyOverhead(b *testing.B) {
	e := startDev(b)
	var d v1.Deployment
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "bench", Image: "http-echo",
		Resources: map[string]string{"cpu": "1", "mem": "64m"}, Replicas: intp(1), HealthCheck: fastHealth()}, &d); code != http.StatusCreated {
		b.Fatalf("create: %d", code)
	}
	endpoint := e.waitServing(d.ID, 1).Routes[0].Endpoint
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	get := func(url string, auth bool) time.Duration {
		req, _ := http.NewRequest("GET", url, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+e.token)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
		return time.Since(start)
	}
	direct, proxied := "http://"+endpoint+"/x", e.url+"/v1/deployments/"+d.ID+"/proxy/x"
	for range 200 { // warm both paths' connections
		get(direct, false)
		get(proxied, true)
	}
	b.ResetTimer()
	ds, ps := make([]time.Duration, b.N), make([]time.Duration, b.N)
	for i := range b.N {
		ds[i] = get(direct, false)
		ps[i] = get(proxied, true)
	}
	b.StopTimer()
	slices.Sort(ds)
	slices.Sort(ps)
	p50 := func(s []time.Duration) float64 { return float64(s[len(s)/2].Microseconds()) }
	b.ReportMetric(p50(ds), "direct-p50-µs")
	b.ReportMetric(p50(ps), "proxy-p50-µs")
	b.ReportMetric(p50(ps)-p50(ds), "added-p50-µs")

	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	const workers, each = 16, 250
	start := time.Now()
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for range each {
				get(proxied, true)
			}
		}()
	}
	for range workers {
		<-done
	}
	b.ReportMetric(float64(workers*each)/time.Since(start).Seconds(), "proxy-req/s-1core")
	b.ReportMetric(0, "ns/op")
}
