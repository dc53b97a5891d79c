package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// discoveryTTL is how old a manager's table of a deployment's HEALTHY
// routes may be before a request reads it again (ServiceDiscoverySync):
// every manager reads the same rows, so every one proxies to the same
// routes within this much.
const discoveryTTL = 250 * time.Millisecond

// traffic is the proxy's state: per deployment, its HEALTHY routes and
// the requests in flight on each.
type traffic struct {
	mu      sync.Mutex
	tables  map[domain.DeploymentID]*routeTable
	metrics *proxyMetrics
}

type routeTable struct {
	// load integrates the requests in flight over time, for the
	// autoscaler: area (request-seconds) since since, with inflight now.
	load struct {
		area     float64
		since    time.Time
		last     time.Time
		inflight int64
	}
	read      time.Time
	endpoints []string
	next      atomic.Uint64
	// inflight counts requests per endpoint; entries outlive refreshes so
	// a request started before one is still counted after it.
	inflight map[string]*atomicCounter
}

// atomicCounter counts one route's requests in flight.
type atomicCounter = atomic.Int64

type proxyMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newProxyMetrics(reg prometheus.Registerer) *proxyMetrics {
	if reg == nil {
		return nil
	}
	m := &proxyMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sokovan_deployment_proxy_requests_total",
			Help: "Requests proxied to deployments, by deployment and status code."}, []string{"deployment", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sokovan_deployment_proxy_duration_seconds",
			Help:    "Duration of proxied requests until the answer ended, by deployment and status code.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9)}, []string{"deployment", "code"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// table returns the deployment's table, read again when older than
// discoveryTTL. Only HEALTHY routes whose session is RUNNING serve.
func (t *traffic) table(ctx context.Context, st Store, id domain.DeploymentID, now time.Time) (*routeTable, error) {
	t.mu.Lock()
	if t.tables == nil {
		t.tables = map[domain.DeploymentID]*routeTable{}
	}
	tab := t.tables[id]
	if tab == nil {
		tab = &routeTable{inflight: map[string]*atomicCounter{}}
		t.tables[id] = tab
	}
	fresh := now.Sub(tab.read) < discoveryTTL
	t.mu.Unlock()
	if fresh {
		return tab, nil
	}
	rs, err := st.ListRoutes(ctx, store.RouteFilter{Deployments: []domain.DeploymentID{id},
		Statuses: []domain.RouteStatus{domain.RouteHealthy}})
	if err != nil {
		return nil, err
	}
	var eps []string
	for _, r := range rs {
		if r.SessionStatus == domain.SessionRunning && r.Endpoint != "" {
			eps = append(eps, r.Endpoint)
		}
	}
	t.mu.Lock()
	tab.endpoints, tab.read = eps, now
	for _, ep := range eps {
		if tab.inflight[ep] == nil {
			tab.inflight[ep] = new(atomicCounter)
		}
	}
	t.mu.Unlock()
	return tab, nil
}

// pick chooses the endpoint with the fewest requests in flight, other
// than skip, starting the scan at a rotating place so ties spread
// round-robin. It counts the request; done uncounts it.
func (t *traffic) pick(tab *routeTable, skip string) (endpoint string, done func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(tab.endpoints)
	if n == 0 {
		return "", nil
	}
	start := int(tab.next.Add(1) % uint64(n))
	best := ""
	var bestLoad int64
	for i := range n {
		ep := tab.endpoints[(start+i)%n]
		if ep == skip {
			continue
		}
		if load := tab.inflight[ep].Load(); best == "" || load < bestLoad {
			best, bestLoad = ep, load
		}
	}
	if best == "" {
		return "", nil
	}
	c := tab.inflight[best]
	c.Add(1)
	tab.count(1)
	return best, func() {
		c.Add(-1)
		t.mu.Lock()
		tab.count(-1)
		t.mu.Unlock()
	}
}

// count adds delta to the table's requests in flight, first adding what
// was in flight since the last change to the integral; t.mu is held.
func (tab *routeTable) count(delta int64) {
	now := time.Now()
	l := &tab.load
	if l.since.IsZero() {
		l.since = now
	} else {
		l.area += float64(l.inflight) * now.Sub(l.last).Seconds()
	}
	l.last = now
	l.inflight += delta
}

// TakeLoad returns, per deployment this manager proxied to, the average
// requests in flight since the previous call (or the first request), and
// starts the next period. It is the deployment controller's
// deploy.LoadSource.
func (s *Server) TakeLoad() map[domain.DeploymentID]float64 {
	t := &s.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	out := make(map[domain.DeploymentID]float64, len(t.tables))
	for id, tab := range t.tables {
		l := &tab.load
		if l.since.IsZero() {
			continue
		}
		area := l.area + float64(l.inflight)*now.Sub(l.last).Seconds()
		if span := now.Sub(l.since).Seconds(); span > 0 {
			out[id] = area / span
		}
		l.area, l.since, l.last = 0, now, now
	}
	return out
}

// idempotent requests may be sent twice: RFC 9110's idempotent methods,
// without a body to replay.
func idempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodTrace:
		return r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0
	}
	return false
}

// retryOnce is the proxy's transport: a request refused at connect (the
// route's process is gone, its status not yet changed) is sent once more
// to another route, when it is idempotent. Nothing was sent in that case,
// so even a body-less POST could go again, but only idempotent ones do,
// as the contract says.
type retryOnce struct {
	base  http.RoundTripper
	again func(skip string) (string, func())
}

type doneKey struct{}

func (t retryOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || !idempotent(req) {
		return resp, err
	}
	ep, done := t.again(req.URL.Host)
	if ep == "" {
		return resp, err
	}
	if d, ok := req.Context().Value(doneKey{}).(*func()); ok {
		// The retried route now carries the request in flight.
		(*d)()
		*d = done
	} else {
		defer done()
	}
	out := req.Clone(req.Context())
	out.URL.Host = ep
	out.Host = ep
	return t.base.RoundTrip(out)
}

func (s *Server) deploymentProxy(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := s.cachedProxyDeployment(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if m := s.traffic.metrics; m != nil {
			code := strconv.Itoa(sw.code())
			m.requests.WithLabelValues(string(d.ID), code).Inc()
			m.latency.WithLabelValues(string(d.ID), code).Observe(time.Since(start).Seconds())
		}
	}()
	tab, err := s.traffic.table(ctx, s.store, d.ID, s.clock.Now())
	if err != nil {
		return err
	}
	release, err := s.proxies.acquire("", "")
	if err != nil {
		return err
	}
	defer release()
	ep, done := s.traffic.pick(tab, "")
	if ep == "" {
		s.fail(sw, r, &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
			Message: fmt.Sprintf("deployment %s (%s, %s) has no HEALTHY route to serve the request", d.Name, d.ID, d.Status)})
		return nil
	}
	defer func() { done() }()
	prefix := "/v1/deployments/" + r.PathValue("id") + "/proxy"
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: ep})
			pr.Out.URL.Path = "/" + pr.In.PathValue("path")
			pr.Out.URL.RawPath = ""
			pr.Out.Header.Del("Authorization")
			pr.SetXForwarded()
			pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
		},
		Transport:     retryOnce{base: s.proxies.transport, again: func(skip string) (string, func()) { return s.traffic.pick(tab, skip) }},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.WarnContext(r.Context(), "deployment proxy", "deployment", d.ID, "route", ep, "err", err)
			s.fail(w, r, &apiError{Status: http.StatusBadGateway, Code: codeBadGateway,
				Message: fmt.Sprintf("deployment %s: its route at %s did not answer", d.Name, ep)})
		},
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	rp.ServeHTTP(sw, r.WithContext(context.WithValue(ctx, doneKey{}, &done)))
	return nil
}
