package manager_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/api"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/manager"
	"github.com/sokovan-go/sokovan/internal/simulate"
	"github.com/sokovan-go/sokovan/internal/web"
)

// BenchmarkBurst submits bursts through the REST API of a real dev mode
// (SQLite, two local agents on the process runtime, the coordinator's
// default intervals) and reports what a user would see. Latencies come from
// the server's own timestamps: a session's created_at and the history
// entry that moved it to RUNNING, so the client's polling adds nothing.
// Each sub-benchmark is one burst on a fresh dev mode; run it with
// -benchtime 1x (docs/PERFORMANCE.md has the figures).
func BenchmarkBurst(b *testing.B) {
	if testing.Short() {
		b.Skip("starts dev mode with real kernels")
	}
	b.Run("at-once-200", func(b *testing.B) { benchAtOnce(b, 200) })
	b.Run("at-once-1000", func(b *testing.B) { benchAtOnce(b, 1000) })
	b.Run("rate-20ps-100", func(b *testing.B) { benchRate(b, 100, 20) })
	b.Run("time-limit-5s", func(b *testing.B) { benchTimeLimit(b, 5*time.Second) })
	b.Run("hung-agent", benchHungAgent)
}

// burstClients bounds the client's concurrent submits, as a script using a
// connection pool would.
const burstClients = 32

// burstBound is the most one wait lasts: a scenario that misses it fails
// and says where it stood, rather than hanging the run. 90 s, or
// SOKOVAN_BURST_BOUND (a Go duration) to measure a baseline slower than
// that.
func burstBound(b *testing.B) time.Duration {
	v := os.Getenv("SOKOVAN_BURST_BOUND")
	if v == "" {
		return 90 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("SOKOVAN_BURST_BOUND=%q: want a positive duration such as 5m", v)
	}
	return d
}

// burstBoundFor bounds the wait for n sessions to run. Before issue 26 the
// coordinator started kernels one session after another, about half a
// second each here, so a thousand took minutes: a second per session still
// measures that, and a stuck burst still ends.
func burstBoundFor(b *testing.B, n int) time.Duration {
	return max(burstBound(b), time.Duration(n)*time.Second)
}

// burstSession is what every burst submits: a batch session of the sleep
// image, small enough that a thousand fit on the two agents.
func burstSession(name string) v1.CreateSessionRequest {
	return v1.CreateSessionRequest{Name: name, Type: "batch", Image: "sleep",
		Resources: map[string]string{"cpu": "0.1", "mem": "32m"}}
}

func benchAtOnce(b *testing.B, n int) {
	var res burstResult
	for range b.N {
		e := startBurstDev(b)
		w := e.watch()
		reqs := make([]v1.CreateSessionRequest, n)
		for i := range reqs {
			reqs[i] = burstSession(fmt.Sprintf("burst-%04d", i))
		}
		subs := e.submitAll(reqs, burstClients)
		w.wait(ids(subs), "RUNNING", burstBoundFor(b, n))
		res.add(e.measure(subs))
		e.stop()
	}
	res.report(b, true)
}

func benchRate(b *testing.B, n int, perSecond int) {
	var res burstResult
	for range b.N {
		e := startBurstDev(b)
		w := e.watch()
		gap := time.Second / time.Duration(perSecond)
		subs := make([]v1.Session, 0, n)
		start := time.Now()
		for i := range n {
			// An absolute schedule: a slow submit does not push the rest
			// back, it only shortens the next wait.
			time.Sleep(time.Until(start.Add(time.Duration(i) * gap)))
			s, err := e.create(context.Background(), burstSession(fmt.Sprintf("rate-%04d", i)))
			if err != nil {
				b.Fatal(err)
			}
			subs = append(subs, s)
		}
		w.wait(ids(subs), "RUNNING", burstBoundFor(b, n))
		res.add(e.measure(subs))
		e.stop()
	}
	res.report(b, false)
}

func benchTimeLimit(b *testing.B, limit time.Duration) {
	var fired, ended []time.Duration
	for range b.N {
		e := startBurstDev(b)
		w := e.watch()
		req := burstSession("time-limit")
		req.TimeLimit = limit.String()
		s, err := e.create(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		// The limit counts from RUNNING; its end is bounded after that.
		w.wait([]string{s.ID}, "RUNNING", burstBound(b))
		w.wait([]string{s.ID}, "TERMINATED", limit+burstBound(b))
		hist := e.historyUntil(s.ID, "TERMINATED")
		running, _ := entered(hist, "RUNNING")
		terminated, _ := entered(hist, "TERMINATED")
		i := slices.IndexFunc(hist, func(h v1.History) bool { return h.To == "TERMINATING" })
		if i < 0 || hist[i].Message != "time limit" {
			b.Fatalf("session %s did not end for its time limit: %+v", s.ID, hist)
		}
		terminating := hist[i].At
		fired, ended = append(fired, terminating.Sub(running)), append(ended, terminated.Sub(running))
		e.stop()
	}
	b.ReportMetric(0, "ns/op") // one burst per op says nothing; the latencies do
	b.ReportMetric(mean(fired).Seconds(), "fired_after_s")
	b.ReportMetric(mean(ended).Seconds(), "ended_after_s")
	b.Logf("time limit %v: TERMINATING %.1f s and TERMINATED %.1f s after RUNNING (target: ended within %v)",
		limit, mean(fired).Seconds(), mean(ended).Seconds(), limit+time.Second)
}

// benchHungAgent adds an agent that registers and heartbeats like a live
// one but whose RPC server never answers, places sessions on it, and then
// measures sessions designated to a healthy agent: a stuck call must not
// hold up everyone else.
func benchHungAgent(b *testing.B) {
	const hungSessions, healthySessions = 4, 4
	var healthy []time.Duration
	for range b.N {
		e := startBurstDev(b)
		e.hungAgent("hung-agent")
		w := e.watch()
		var hung []v1.Session
		for i := range hungSessions {
			req := burstSession(fmt.Sprintf("hung-%d", i))
			req.DesignatedAgents = []string{"hung-agent"}
			s, err := e.create(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			hung = append(hung, s)
		}
		// Placed on the hung agent, so the coordinator's next step calls
		// it; only then do the healthy sessions arrive.
		w.wait(ids(hung), "SCHEDULED", burstBound(b))
		reqs := make([]v1.CreateSessionRequest, healthySessions)
		for i := range reqs {
			reqs[i] = burstSession(fmt.Sprintf("healthy-%d", i))
			reqs[i].DesignatedAgents = []string{string(e.agents[0])}
		}
		subs := e.submitAll(reqs, burstClients)
		w.wait(ids(subs), "RUNNING", burstBound(b))
		lat, _ := e.latencies(subs)
		healthy = append(healthy, lat...)
		var where []string
		for _, s := range hung {
			where = append(where, e.session(s.ID).Status)
		}
		b.Logf("sessions on the hung agent are %s when the healthy ones run", strings.Join(where, ", "))
		e.stop()
	}
	slices.Sort(healthy)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(percentile(healthy, 50).Seconds(), "healthy_p50_s")
	b.ReportMetric(healthy[len(healthy)-1].Seconds(), "healthy_max_s")
	b.Logf("hung agent: %d healthy sessions submit→RUNNING p50 %.2f s, max %.2f s (target ≤ 1 s)",
		len(healthy), percentile(healthy, 50).Seconds(), healthy[len(healthy)-1].Seconds())
}

// burstEnv is a dev mode started for one burst and a client of its API.
type burstEnv struct {
	b          *testing.B
	url        string
	token      string
	agentToken string
	agents     []string
	hc         *http.Client
	cancel     context.CancelFunc
	done       chan error
	// stopWatch ends the event stream, if one was opened.
	stopWatch context.CancelFunc
}

// startBurstDev starts dev mode as `sokovan dev` does — default
// coordinator intervals, two agents, the same user API — with only the
// data dir and the agents' capacity changed, and waits for the agents.
func startBurstDev(b *testing.B) *burstEnv {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan manager.DevInfo, 1)
	e := &burstEnv{b: b, cancel: cancel, done: make(chan error, 1),
		hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * burstClients}}}
	// The capacity is accounting only (kernels sleep): 1,000 sessions of
	// 0.1 cpu and 32m fit on either agent alone, and each agent's default
	// max kernels (1,000) holds them too.
	cfg := manager.DevConfig{DataDir: b.TempDir(), Listen: "127.0.0.1:0", Agents: 2,
		AgentCapacity: map[string]string{"cpu": "128", "mem": "128g"}, SelfExe: self, UserAPI: devUserAPI}
	if os.Getenv("SOKOVAN_BURST_TRACE") != "" {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	go func() { e.done <- manager.RunDev(ctx, cfg, func(i manager.DevInfo) { ready <- i }) }()
	select {
	case info := <-ready:
		e.url, e.token, e.agentToken = info.URL, info.AdminToken, info.Parts.AgentToken
		for _, a := range info.Agents {
			e.agents = append(e.agents, string(a))
		}
	case err := <-e.done:
		cancel()
		b.Fatalf("dev mode did not start: %v", err)
	}
	b.Cleanup(e.stop)
	e.waitAlive(e.agents...)
	return e
}

// devUserAPI is cmd/sokovan's userAPI (package main, so not importable):
// the same API, dashboard and estimator a user of `sokovan dev` talks to.
func devUserAPI(p manager.Parts, admin string) (http.Handler, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := api.EnsureAdmin(ctx, p.Store, admin); err != nil {
		return nil, err
	}
	srv := api.New(api.Config{}, api.Deps{Store: p.Store, Sessions: p.Coordinator, Slots: p.Slots, Plugins: p.Plugins,
		Hooks: p.Hooks, Admit: p.Admit, AgentRPC: p.Gateway, AgentToken: p.AgentToken, Logs: p.Agents.Logs, Gatherer: p.Gatherer,
		Registerer: p.Registerer, Deploy: p.Deploy,
		Ready: func(ctx context.Context) error {
			_, err := p.Store.ListResourceGroups(ctx)
			return err
		},
		Estimate: simulate.Estimator(p.Store, p.Slots, clock.Wall)})
	p.Deploy.UseLoad(srv)
	return web.Mount(srv), nil
}

// stop ends dev mode, and with it every kernel it started.
func (e *burstEnv) stop() {
	if e.cancel == nil {
		return
	}
	if e.stopWatch != nil {
		e.stopWatch()
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.b.Errorf("dev mode stopped with %v", err)
	}
	e.hc.CloseIdleConnections()
	e.cancel = nil
}

// call sends one API request; out, when not nil, takes a 2xx answer.
func (e *burstEnv) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

func (e *burstEnv) create(ctx context.Context, req v1.CreateSessionRequest) (v1.Session, error) {
	var s v1.Session
	err := e.call(ctx, http.MethodPost, "/v1/sessions", req, &s)
	return s, err
}

func (e *burstEnv) session(id string) v1.Session {
	e.b.Helper()
	var s v1.Session
	if err := e.call(context.Background(), http.MethodGet, "/v1/sessions/"+id, nil, &s); err != nil {
		e.b.Fatal(err)
	}
	return s
}

func (e *burstEnv) history(id string) []v1.History {
	e.b.Helper()
	h, err := e.historyOf(context.Background(), id)
	if err != nil {
		e.b.Fatal(err)
	}
	return h
}

// historyUntil reads a session's history once it shows the session
// entering status: the coordinator writes history just after the move
// the event stream reports.
func (e *burstEnv) historyUntil(id, status string) []v1.History {
	e.b.Helper()
	h, err := e.historyWith(context.Background(), id, status)
	if err != nil {
		e.b.Fatal(err)
	}
	return h
}

func (e *burstEnv) historyWith(ctx context.Context, id, status string) ([]v1.History, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := e.historyOf(ctx, id)
		if err != nil {
			return nil, err
		}
		if _, ok := entered(h, status); ok {
			return h, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("session %s: no %s in its history 10 s after the event said so: %+v", id, status, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *burstEnv) historyOf(ctx context.Context, id string) ([]v1.History, error) {
	var out struct {
		Items []v1.History `json:"items"`
	}
	err := e.call(ctx, http.MethodGet, "/v1/sessions/"+id+"/history", nil, &out)
	return out.Items, err
}

// submitAll submits reqs with at most clients requests in flight and
// returns the created sessions in the order of reqs.
func (e *burstEnv) submitAll(reqs []v1.CreateSessionRequest, clients int) []v1.Session {
	e.b.Helper()
	out := make([]v1.Session, len(reqs))
	errs := make([]error, len(reqs))
	parallel(len(reqs), clients, func(i int) { out[i], errs[i] = e.create(context.Background(), reqs[i]) })
	if err := errors.Join(errs...); err != nil {
		e.b.Fatalf("submitting %d sessions: %v", len(reqs), err)
	}
	return out
}

// parallel runs do(0..n-1) on at most width goroutines.
func parallel(n, width int, do func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, width) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// waitAlive waits until the named agents are ALIVE, as the API lists them
// (dev mode says it is ready before its agents have registered).
func (e *burstEnv) waitAlive(names ...string) {
	e.b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct {
			Items []v1.Agent `json:"items"`
		}
		if err := e.call(context.Background(), http.MethodGet, "/v1/agents", nil, &out); err != nil {
			e.b.Fatal(err)
		}
		alive := 0
		for _, a := range out.Items {
			if a.Status == "ALIVE" && slices.Contains(names, a.ID) {
				alive++
			}
		}
		if alive == len(names) {
			return
		}
		if time.Now().After(deadline) {
			e.b.Fatalf("%d of the agents %v ALIVE after 30 s", alive, names)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// measure reads each session's submit → RUNNING from the server's history.
func (e *burstEnv) measure(subs []v1.Session) burstSample {
	e.b.Helper()
	lat, last := e.latencies(subs)
	created := make([]time.Time, len(subs))
	for i, s := range subs {
		created[i] = s.CreatedAt
	}
	first, lastSubmit := slices.MinFunc(created, time.Time.Compare), slices.MaxFunc(created, time.Time.Compare)
	if os.Getenv("SOKOVAN_BURST_TRACE") != "" {
		// Where the slowest session's time went, step by step.
		slow := 0
		for i := range lat {
			if lat[i] > lat[slow] {
				slow = i
			}
		}
		for _, h := range e.history(subs[slow].ID) {
			e.b.Logf("slowest %s: +%v %s %s→%s %s", subs[slow].ID, h.At.Sub(subs[slow].CreatedAt).Round(time.Millisecond),
				h.Handler, h.From, h.To, h.Message)
		}
	}
	return burstSample{latencies: lat, allRunning: last.Sub(first), submitting: lastSubmit.Sub(first)}
}

// latencies returns each session's created_at → RUNNING and the latest
// RUNNING.
func (e *burstEnv) latencies(subs []v1.Session) ([]time.Duration, time.Time) {
	e.b.Helper()
	out := make([]time.Duration, len(subs))
	at := make([]time.Time, len(subs))
	errs := make([]error, len(subs))
	// Fewer readers than submitters: the burst is over, nothing is timed.
	parallel(len(subs), 8, func(i int) {
		h, err := e.historyWith(context.Background(), subs[i].ID, "RUNNING")
		if err != nil {
			errs[i] = err
			return
		}
		running, _ := entered(h, "RUNNING")
		out[i], at[i] = running.Sub(subs[i].CreatedAt), running
	})
	if err := errors.Join(errs...); err != nil {
		e.b.Fatal(err)
	}
	return out, slices.MaxFunc(at, time.Time.Compare)
}

// entered is when the history first shows the session entering status.
func entered(h []v1.History, status string) (time.Time, bool) {
	for _, x := range h {
		if x.To == status && x.From != status {
			return x.At, true
		}
	}
	return time.Time{}, false
}

func ids(ss []v1.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// sessionWatch follows GET /v1/events and keeps every status each session
// was seen entering. It only says when to look: the figures come from the
// sessions' histories.
type sessionWatch struct {
	e    *burstEnv
	mu   sync.Mutex
	seen map[string]map[string]bool
	// failed is why the stream ended, if it did before the benchmark
	// stopped it.
	failed error
}

// watch opens the event stream and returns once it is open, so nothing
// submitted afterwards can be missed.
func (e *burstEnv) watch() *sessionWatch {
	e.b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.stopWatch = cancel
	w := &sessionWatch{e: e, seen: map[string]map[string]bool{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/v1/events", nil)
	if err != nil {
		e.b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	// Not e.hc: its timeout would cut the stream.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		e.b.Fatalf("GET /v1/events: %s", resp.Status)
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	// The stream opens with a comment once the server follows the feed.
	if !lines.Scan() {
		resp.Body.Close()
		e.b.Fatalf("GET /v1/events: closed before it opened: %v", lines.Err())
	}
	go func() {
		defer resp.Body.Close()
		for lines.Scan() {
			data, ok := strings.CutPrefix(lines.Text(), "data: ")
			if !ok {
				continue
			}
			var c v1.Change
			if json.Unmarshal([]byte(data), &c) != nil || c.Kind != "session" {
				continue
			}
			w.mu.Lock()
			if w.seen[c.SessionID] == nil {
				w.seen[c.SessionID] = map[string]bool{}
			}
			w.seen[c.SessionID][c.To] = true
			w.mu.Unlock()
		}
		if ctx.Err() == nil {
			w.mu.Lock()
			w.failed = fmt.Errorf("the event stream ended: %v", lines.Err())
			w.mu.Unlock()
		}
	}()
	return w
}

// wait returns once every session was seen entering status, or fails the
// benchmark after bound saying how many were not.
func (w *sessionWatch) wait(ids []string, status string, bound time.Duration) {
	w.e.b.Helper()
	deadline := time.Now().Add(bound)
	for {
		w.mu.Lock()
		var missing []string
		for _, id := range ids {
			if !w.seen[id][status] {
				missing = append(missing, id)
			}
		}
		failed := w.failed
		w.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if failed != nil {
			w.e.b.Fatal(failed)
		}
		if time.Now().After(deadline) {
			s := w.e.session(missing[0])
			// Where it stuck, from the server's side.
			for _, h := range w.e.history(s.ID) {
				w.e.b.Logf("%s +%v %s %s→%s %s %q", s.ID, h.At.Sub(s.CreatedAt), h.Handler, h.From, h.To, h.Result, h.Message)
			}
			for _, k := range s.Kernels {
				w.e.b.Logf("%s kernel %s on %q is %s (%q)", s.ID, k.ID, k.Agent, k.Status, k.StatusReason)
			}
			w.e.b.Fatalf("%d of %d sessions not %s after %v; e.g. %s is %s (%q)",
				len(missing), len(ids), status, bound, s.ID, s.Status, s.StatusReason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hungAgent registers an agent through the agent wire whose RPC address
// accepts connections and never answers, and keeps it heartbeating so it
// stays ALIVE and schedulable, until the benchmark's cleanup.
func (e *burstEnv) hungAgent(id string) {
	e.b.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	mc := agentrpc.NewManagerClient(e.url, e.agentToken)
	reg := agentrpc.Register{ID: domain.AgentID(id), ResourceGroup: "default", Address: srv.URL, Architecture: "x86_64",
		Runtime: "process", Capacity: map[string]string{"cpu": "128", "mem": "128g"},
		Catalog: process.DefaultCatalog("").Patterns(), Kernels: []agentrpc.KernelReport{}, AllowsCommand: true}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := mc.Register(ctx, reg)
	if err != nil {
		cancel()
		srv.Close()
		e.b.Fatalf("registering %s: %v", id, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		epoch := r.Epoch
		// A dev agent's heartbeat interval.
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			reply, err := mc.Heartbeat(ctx, agentrpc.Heartbeat{ID: reg.ID, Epoch: epoch, Kernels: []agentrpc.KernelReport{}})
			if err == nil && reply.Reregister {
				if r, err := mc.Register(ctx, reg); err == nil {
					epoch = r.Epoch
				}
			}
		}
	}()
	// Before dev mode stops (cleanups run last first): released, the
	// coordinator's call in flight fails at once.
	e.b.Cleanup(func() {
		cancel()
		<-done
		close(release)
		srv.Close()
	})
	e.waitAlive(id)
}

// burstSample is one burst's figures.
type burstSample struct {
	latencies []time.Duration
	// allRunning runs from the first created_at to the last RUNNING;
	// submitting from the first created_at to the last.
	allRunning, submitting time.Duration
}

// burstResult pools the bursts of one sub-benchmark (one with -benchtime 1x).
type burstResult struct {
	latencies              []time.Duration
	allRunning, submitting []time.Duration
}

func (r *burstResult) add(s burstSample) {
	r.latencies = append(r.latencies, s.latencies...)
	r.allRunning = append(r.allRunning, s.allRunning)
	r.submitting = append(r.submitting, s.submitting)
}

func (r *burstResult) report(b *testing.B, withAll bool) {
	slices.Sort(r.latencies)
	p50, p99 := percentile(r.latencies, 50), percentile(r.latencies, 99)
	b.ReportMetric(0, "ns/op") // one burst per op says nothing; the latencies do
	b.ReportMetric(float64(p50)/float64(time.Millisecond), "p50_ms")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99_ms")
	line := fmt.Sprintf("%d sessions submitted over %.2f s: submit→RUNNING p50 %.0f ms, p99 %.0f ms, max %.0f ms",
		len(r.latencies), mean(r.submitting).Seconds(), float64(p50)/float64(time.Millisecond),
		float64(p99)/float64(time.Millisecond), float64(r.latencies[len(r.latencies)-1])/float64(time.Millisecond))
	if withAll {
		b.ReportMetric(mean(r.allRunning).Seconds(), "all_running_s")
		line += fmt.Sprintf("; first submit → all RUNNING %.2f s", mean(r.allRunning).Seconds())
	}
	b.Log(line)
}

// percentile is the nearest-rank percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 × n), 1-based
	return sorted[max(rank, 1)-1]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
