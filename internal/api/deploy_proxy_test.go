package api

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// closedAddr is a loopback address nothing listens on: a connection there
// is refused, as one to a killed route's port is.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestProxyRetriesARefusedIdempotentRequestOnceElsewhere(t *testing.T) {
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer live.Close()
	dead := closedAddr(t)
	liveAddr := live.Listener.Addr().String()
	var tr traffic
	tab := &routeTable{endpoints: []string{dead, liveAddr}, inflight: map[string]*atomicCounter{}}
	for _, ep := range tab.endpoints {
		tab.inflight[ep] = new(atomicCounter)
	}
	rt := retryOnce{base: http.DefaultTransport, again: func(skip string) (string, func()) { return tr.pick(tab, skip) }}
	send := func(method, body string) (*http.Response, error) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, "http://"+dead+"/x", rd)
		return rt.RoundTrip(req)
	}
	resp, err := send("GET", "")
	if err != nil {
		t.Fatalf("GET refused by the first route was not retried: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("retried GET: %d", resp.StatusCode)
	}
	if _, err := send("POST", "payload"); err == nil {
		t.Fatal("a POST with a body was retried; only idempotent requests may be")
	}
	for ep, c := range tab.inflight {
		if n := c.Load(); n != 0 {
			t.Errorf("%s has %d requests in flight after all ended", ep, n)
		}
	}
}

func TestProxyPicksTheRouteWithFewestInFlight(t *testing.T) {
	var tr traffic
	tab := &routeTable{endpoints: []string{"a:1", "b:1", "c:1"}, inflight: map[string]*atomicCounter{}}
	for _, ep := range tab.endpoints {
		tab.inflight[ep] = new(atomicCounter)
	}
	var dones []func()
	seen := map[string]int{}
	for range 3 {
		ep, done := tr.pick(tab, "")
		seen[ep]++
		dones = append(dones, done)
	}
	if len(seen) != 3 {
		t.Fatalf("3 concurrent requests went to %v, want one per route", seen)
	}
	dones[0]()
	freed := ""
	for ep, c := range tab.inflight {
		if c.Load() == 0 {
			freed = ep
		}
	}
	if ep, _ := tr.pick(tab, ""); ep != freed {
		t.Errorf("next request went to %s, want the idle %s", ep, freed)
	}
	if ep, _ := (&traffic{}).pick(&routeTable{}, ""); ep != "" {
		t.Errorf("an empty table picked %q", ep)
	}
}
