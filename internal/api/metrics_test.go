package api_test

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// scrape runs a manager through a little work (sessions placed, one left
// waiting for capacity; with deployment, bob's deployment served and
// called through its proxy) and returns its /metrics exposition.
func scrape(t *testing.T, deployment bool) string {
	t.Helper()
	opts := apitest.Options{}
	if deployment {
		// Every kernel says it serves on echo, which passes the routes'
		// checks and answers what the proxy sends.
		echo := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		t.Cleanup(echo.Close)
		host, port, _ := net.SplitHostPort(echo.Listener.Addr().String())
		p, _ := strconv.Atoi(port)
		opts.Deployments = true
		opts.ServicePorts = []domain.ServicePort{{Name: "http", Protocol: "http", Host: host, Port: p}}
	}
	m := apitest.New(t, opts)
	alice := m.User("alice", "user", "p1")
	for range 2 {
		s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1", "mem": "1g"}})
		waitStatus(t, m, alice, s.ID, "RUNNING")
	}
	if deployment {
		serveDeployment(t, m, m.User("bob", "user", "p1"))
	}
	// Dispersed, the two left 7 cpu free on each agent: 7.5 waits.
	create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "7.5", "mem": "1g"}})
	// Scraped once a round has seen it wait, so every series has figures.
	waited := regexp.MustCompile(`(?m)^sokovan_scheduling_decisions_total\{resource_group="default",result="waiting"\} [1-9]`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		// As an admin: the per-user and per-deployment series too.
		code, body := m.Raw(m.AdminToken, "GET", "/metrics", nil)
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		if waited.Match(body) || time.Now().After(deadline) {
			return string(body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveDeployment creates a deployment of one replica, waits until it is
// READY and sends one request through its proxy, so the deployment
// series (which have labels, hence no family until a first value) exist.
func serveDeployment(t *testing.T, m *apitest.Manager, token string) {
	t.Helper()
	one := 1
	var d v1.Deployment
	if code := m.Do(token, "POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "echo", Image: "sleep", Replicas: &one,
		Resources:   map[string]string{"cpu": "1", "mem": "1g"},
		HealthCheck: &v1.HealthCheck{Interval: "100ms", InitialDelay: "0s"}}, &d); code != http.StatusCreated {
		t.Fatalf("create deployment: status %d", code)
	}
	apitest.Eventually(t, 20*time.Second, "deployment "+d.ID+" to be READY", func() bool {
		m.Do(token, "GET", "/v1/deployments/"+d.ID, nil, &d)
		return d.Status == "READY"
	})
	if code := m.Do(token, "GET", "/v1/deployments/"+d.ID+"/proxy/", nil, nil); code != http.StatusOK {
		t.Fatalf("proxied request: status %d", code)
	}
}

// exported lists the metric families of an exposition by their TYPE lines.
func exported(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// TestMetricsExposition: the series an operator graphs are exported with
// figures that match what happened, and the whole exposition passes
// `promtool check metrics`.
func TestMetricsExposition(t *testing.T) {
	t.Parallel()
	text := scrape(t, false)
	for _, want := range []string{
		`sokovan_scheduling_decisions_total{resource_group="default",result="scheduled"} 2`,
		`sokovan_scheduling_decisions_total{resource_group="default",result="impossible"} 0`,
		`sokovan_queue_wait_seconds_count{resource_group="default"} 2`,
		`sokovan_agent_capacity{agent="agent-0",resource_group="default",slot="cpu"} 8`,
		`sokovan_agent_capacity{agent="agent-1",resource_group="default",slot="mem"} 1.7179869184e+10`,
		`sokovan_user_occupied{slot="cpu",user="alice"} 2`,
		`sokovan_user_occupied{slot="mem",user="alice"} 2.147483648e+09`,
		`sokovan_cluster_metrics_up 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !regexp.MustCompile(`(?m)^sokovan_scheduling_decisions_total\{resource_group="default",result="waiting"\} [1-9]`).MatchString(text) {
		t.Errorf("the session too big for any agent is not counted as waiting")
	}
	if !regexp.MustCompile(`(?m)^sokovan_scheduling_rounds_total\{resource_group="default"\} [1-9]`).MatchString(text) {
		t.Errorf("no scheduling rounds counted")
	}
	occupied := regexp.MustCompile(`(?m)^sokovan_agent_occupied\{agent="agent-\d",resource_group="default",slot="cpu"\} (\d+)$`).FindAllStringSubmatch(text, -1)
	total := 0
	for _, o := range occupied {
		total += int(o[1][0] - '0')
	}
	if len(occupied) != 2 || total != 2 {
		t.Errorf("agents' occupied cpu = %v; want 2 in all over 2 agents", occupied)
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed; .ci/services.sh installs it (Debian package prometheus)")
		}
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "" {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}

// TestGrafanaDashboardNamesExportedMetrics: every metric the shipped
// dashboard queries is one the manager exports.
func TestGrafanaDashboardNamesExportedMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	types := exported(scrape(t, true))
	name := regexp.MustCompile(`\bsokovan_[a-z0-9_]+`)
	check := func(where, expr string) {
		for _, n := range name.FindAllString(expr, -1) {
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suffix); ok && types[b] == "histogram" {
					base = b
				}
			}
			if _, ok := types[base]; !ok {
				t.Errorf("%s queries %s, which /metrics does not export", where, n)
			}
		}
	}
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			check("panel "+p.Title, tg.Expr)
			exprs++
		}
	}
	for _, v := range dash.Templating.List {
		check("variable", v.Definition)
	}
	if exprs == 0 {
		t.Fatal("the dashboard has no queries")
	}
}

// TestMetricsHidePeopleFromAnonymousScrapes is issue 28's probe: /metrics
// needs no token, and it named every user with what they hold and every
// deployment. Anonymously, and with a plain user's token, those series
// are left out; the metrics token or an admin's token gets them.
func TestMetricsHidePeopleFromAnonymousScrapes(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{API: api.Config{MetricsToken: "skvm_metrics-token-for-prometheus"}})
	alice := m.User("alice", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1", "mem": "1g"}})
	waitStatus(t, m, alice, s.ID, "RUNNING")
	private := regexp.MustCompile(`(?m)^sokovan_user_occupied\{`)
	public := regexp.MustCompile(`(?m)^sokovan_agent_capacity\{`)
	for _, c := range []struct {
		who, token string
		all        bool
	}{
		{"anonymous", "", false},
		{"a user", alice, false},
		{"a wrong token", "skvm_not-the-metrics-token", false},
		{"the metrics token", "skvm_metrics-token-for-prometheus", true},
		{"an admin", m.AdminToken, true},
	} {
		code, body := m.Raw(c.token, "GET", "/metrics", nil)
		if code != http.StatusOK {
			t.Fatalf("%s: /metrics %d %s", c.who, code, body)
		}
		if !public.Match(body) {
			t.Errorf("%s: /metrics lacks the agents' series", c.who)
		}
		if got := private.Match(body); got != c.all {
			t.Errorf("%s: per-user series shown %v, want %v", c.who, got, c.all)
		}
		if !c.all && strings.Contains(string(body), `user="alice"`) {
			t.Errorf("%s: /metrics names alice", c.who)
		}
	}
}
