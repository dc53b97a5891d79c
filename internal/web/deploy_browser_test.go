package web_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/deploy"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// startDeployDash is startDash with the deployment controller running
// against the same store and API, as `sokovan server` wires it, and every
// kernel serving one HTTP port: a real server here that answers the
// health checks, so routes go HEALTHY through the controller's own
// checks.
func startDeployDash(t *testing.T) *dash {
	t.Helper()
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(model.Close)
	_, portStr, err := net.SplitHostPort(strings.TrimPrefix(model.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	d := startDash(t, apitest.Options{ServicePorts: []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: port}}})
	adm := admit.New(admit.Deps{Store: d.Store, Slots: d.Slots, Marker: d.Coordinator}, admit.Config{})
	ctrl := deploy.New(deploy.Deps{Store: d.Store, Admit: adm, Sessions: d.Coordinator}, deploy.Config{
		Interval: 100 * time.Millisecond, DrainGrace: 300 * time.Millisecond, EvictionGrace: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctrl.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return d
}

// checkNames fails the test for any visible, enabled control a screen
// reader could not name, as the keyboard test does for the sessions page.
func (b *browser) checkNames(t *testing.T, page string) {
	t.Helper()
	unnamed := eval[[]string](t, b, `[...document.querySelectorAll('a[href], button, input, select, textarea')]
		.filter(el => !el.disabled && el.offsetParent !== null)
		.filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.textContent.trim())
		.map(el => el.outerHTML.slice(0, 120))`)
	if len(unnamed) > 0 {
		t.Errorf("%s: controls with no accessible name: %s", page, strings.Join(unnamed, "\n"))
	}
}

// TestDashboardDeployments: alice creates a deployment from the form, sees
// its route go HEALTHY with a link to its session, scales it to 2 and sees
// two healthy routes, then destroys it behind the confirmation and sees it
// DESTROYED, listed again only with "Include destroyed". A bad duration and
// a wrong replicas count are refused beside their fields.
func TestDashboardDeployments(t *testing.T) {
	exe := chromium(t)
	d := startDeployDash(t)
	alice := d.User("alice", "user", "p1")

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	b.go_(t, "#/deployments", `document.getElementById('deployment-count')?.textContent === 'No deployments yet.'`)
	b.checkLabels(t, "deployments")
	b.checkNames(t, "deployments")
	b.run(t, "create a deployment",
		chromedp.SendKeys(chromedp.ID("cd-name"), "llm"),
		chromedp.SendKeys(chromedp.ID("cd-image"), "sleep"),
		chromedp.SetValue(chromedp.ID("cd-cpu"), "1"),
		chromedp.SetValue(chromedp.ID("cd-mem"), "1g"),
		chromedp.SetValue(chromedp.ID("cd-interval"), "200ms"),
		chromedp.SetValue(chromedp.ID("cd-delay"), "soon"),
		chromedp.Click(chromedp.CSS(`#create-deployment button[type=submit]`)))
	// A bad duration: the API's 400 names health_check.initial_delay and
	// its message shows beside that field; nothing is created.
	b.waitJS(t, "the delay's error", `!document.getElementById('cd-delay-error').hidden`)
	if msg := eval[string](t, b, `document.getElementById('cd-delay-error').textContent`); !strings.Contains(msg, "soon") {
		t.Errorf("delay error = %q; want the API's message naming the value", msg)
	}
	b.run(t, "fix the delay and submit", chromedp.SetValue(chromedp.ID("cd-delay"), "0s"),
		chromedp.Click(chromedp.CSS(`#create-deployment button[type=submit]`)))
	b.waitJS(t, "the deployment's page with one HEALTHY route",
		`location.hash.startsWith('#/deployments/') && document.querySelectorAll('#route-rows tr[data-status=HEALTHY]').length === 1`)
	var list v1.List[v1.Deployment]
	d.Do(alice, "GET", "/v1/deployments", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "llm" || list.Items[0].Resources["cpu"] != "1" {
		t.Fatalf("deployments after the form: %+v", list.Items)
	}
	dep := list.Items[0]
	b.checkLabels(t, "deployment")
	b.checkNames(t, "deployment")
	link := eval[string](t, b, `document.querySelector('#route-rows tr a').getAttribute('href')`)
	var got v1.Deployment
	d.Do(alice, "GET", "/v1/deployments/"+dep.ID, nil, &got)
	if len(got.Routes) != 1 || link != "#/sessions/"+got.Routes[0].SessionID {
		t.Errorf("route's session link = %q; want the route's session %+v", link, got.Routes)
	}
	if spec := eval[string](t, b, `document.getElementById('deployment-facts').textContent`); !strings.Contains(spec, "sleep") ||
		!strings.Contains(spec, "cpu 1, mem 1g") || !strings.Contains(spec, "GET /health every 200ms") {
		t.Errorf("spec = %q; want image, per-replica slots and health check", spec)
	}
	b.shot(t, "deployment-one")

	// A replicas count the API refuses: its message beside the field, and
	// nothing changes.
	b.run(t, "scale to 65", chromedp.SetValue(chromedp.ID("d-replicas"), "65"),
		chromedp.Click(chromedp.CSS(`#scale button[type=submit]`)))
	b.waitJS(t, "the replicas error", `!document.getElementById('d-replicas-error').hidden`)
	if msg := eval[string](t, b, `document.getElementById('d-replicas-error').textContent`); !strings.Contains(msg, "65") {
		t.Errorf("replicas error = %q; want the API's message naming 65", msg)
	}
	d.Do(alice, "GET", "/v1/deployments/"+dep.ID, nil, &got)
	if got.Replicas != 1 {
		t.Errorf("a refused scale changed replicas to %d", got.Replicas)
	}

	b.run(t, "scale to 2", chromedp.SetValue(chromedp.ID("d-replicas"), "2"),
		chromedp.Click(chromedp.CSS(`#scale button[type=submit]`)))
	b.waitJS(t, "two HEALTHY routes", `document.querySelectorAll('#route-rows tr[data-status=HEALTHY]').length === 2`)
	b.waitJS(t, "the history shows the routes' steps", `document.querySelectorAll('#deployment-history tr[data-result]').length > 0`)
	b.shot(t, "deployment-two")

	// The list shows 2 of 2 healthy.
	b.go_(t, "#/deployments", `document.querySelector('#deployment-rows tr[data-name=llm] td.replicas')?.textContent === '2 / 2'`)
	b.shot(t, "deployments")

	// Destroy asks first; Keep it changes nothing.
	b.go_(t, "#/deployments/"+dep.ID, `document.querySelectorAll('#route-rows tr').length === 2`)
	b.click(t, "destroy, then keep", "#destroy")
	b.waitJS(t, "the question", `!document.getElementById('destroy-confirm').hidden && document.activeElement.id === 'destroy-yes'`)
	if q := eval[string](t, b, `document.getElementById('destroy-q').textContent`); !strings.Contains(q, "llm") {
		t.Errorf("the confirmation %q does not name the deployment", q)
	}
	b.shot(t, "deployment-confirm")
	b.click(t, "keep it", "#destroy-no")
	b.waitJS(t, "the question gone", `document.getElementById('destroy-confirm').hidden`)
	// Escape is Keep it too, and the focus goes back to Destroy….
	b.click(t, "destroy, then Escape", "#destroy")
	b.waitJS(t, "the question", `document.activeElement.id === 'destroy-yes'`)
	b.run(t, "Escape", chromedp.KeyEvent(kb.Escape))
	b.waitJS(t, "the question gone, focus on Destroy…", `document.getElementById('destroy-confirm').hidden && document.activeElement.id === 'destroy'`)
	d.Do(alice, "GET", "/v1/deployments/"+dep.ID, nil, &got)
	if got.Status == "DESTROYING" || got.Status == "DESTROYED" {
		t.Fatalf("Keep it destroyed the deployment: %s", got.Status)
	}
	b.click(t, "destroy for real", "#destroy")
	b.waitJS(t, "the question", `!document.getElementById('destroy-confirm').hidden`)
	b.click(t, "confirm", "#destroy-yes")
	b.waitJS(t, "DESTROYED with no routes", `document.getElementById('main').dataset.status === 'DESTROYED' &&
		document.getElementById('main').dataset.routes === '0' && document.getElementById('destroy').hidden`)
	b.shot(t, "deployment-destroyed")

	// The list leaves DESTROYED deployments out until asked.
	b.go_(t, "#/deployments", `document.getElementById('deployment-count')?.textContent === 'No deployments yet.'`)
	b.click(t, "include destroyed", "#d-all")
	b.waitJS(t, "the destroyed one listed", `document.querySelector('#deployment-rows tr[data-name=llm]')?.dataset.status === 'DESTROYED'`)
	if !b.noCSPViolations(t) {
		t.Error("the page broke its Content-Security-Policy")
	}
}

// TestDashboardDeploymentBlocked: a deployment of three 6-cpu replicas on
// two 8-cpu agents runs two; the third route stays PROVISIONING and its
// row says why its session waits, with the hint. An admin's list shows
// the owner.
func TestDashboardDeploymentBlocked(t *testing.T) {
	exe := chromium(t)
	d := startDeployDash(t)
	alice := d.User("alice", "user", "p1")
	three := 3
	var dep v1.Deployment
	if code := d.Do(alice, "POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "big", Image: "sleep", Replicas: &three,
		Resources:   map[string]string{"cpu": "6", "mem": "1g"},
		HealthCheck: &v1.HealthCheck{Interval: "200ms", InitialDelay: "0s"}}, &dep); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	b := newBrowser(t, exe)
	b.login(t, d.URL, d.AdminToken, "admin")
	b.go_(t, "#/deployments/"+dep.ID, `document.querySelectorAll('#route-rows tr[data-status=HEALTHY]').length === 2 &&
		document.querySelector('#route-rows tr[data-status=PROVISIONING] .blocker[data-kind=capacity]') !== null`)
	text := eval[string](t, b, `document.querySelector('#route-rows tr[data-status=PROVISIONING] .blocker').textContent`)
	if !strings.Contains(text, "cpu") || !strings.Contains(text, "agents are busy") {
		t.Errorf("the waiting route's blocker reads %q; want the cpu it lacks and the hint", text)
	}
	b.shot(t, "deployment-blocked")
	b.go_(t, "#/deployments", `document.querySelector('#deployment-rows tr[data-name=big] td.owner')?.textContent === 'alice'`)
	if got := eval[string](t, b, `document.querySelector('#deployment-rows tr[data-name=big] td.replicas').textContent`); got != "2 / 3" {
		t.Errorf("replicas cell = %q, want 2 / 3", got)
	}
}

// TestDashboardDeploymentManage: what `sokovan deploy` offers beyond create,
// scale and destroy, from the deployment's page. A rolling update of the
// environment and max surge is a new revision; a bad quantity is refused
// beside its field. Autoscaling is set, refused for a bad target, and
// turned off. A token is created and shown once, opens the deployment's
// proxy, is listed, and once revoked opens nothing.
func TestDashboardDeploymentManage(t *testing.T) {
	exe := chromium(t)
	d := startDeployDash(t)
	alice := d.User("alice", "user", "p1")
	one := 1
	var dep v1.Deployment
	if code := d.Do(alice, "POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "llm", Image: "sleep", Replicas: &one,
		Resources:   map[string]string{"cpu": "1", "mem": "1g"},
		HealthCheck: &v1.HealthCheck{Interval: "200ms", InitialDelay: "0s"}}, &dep); code != http.StatusCreated {
		t.Fatalf("create: status %d", code)
	}
	get := func() v1.Deployment {
		t.Helper()
		var got v1.Deployment
		if code := d.Do(alice, "GET", "/v1/deployments/"+dep.ID, nil, &got); code != http.StatusOK {
			t.Fatalf("get: status %d", code)
		}
		return got
	}

	b := newBrowser(t, exe)
	b.login(t, d.URL, alice, "alice")
	b.go_(t, "#/deployments/"+dep.ID, `document.querySelectorAll('#route-rows tr[data-status=HEALTHY]').length === 1`)
	b.checkLabels(t, "deployment")
	b.checkNames(t, "deployment")

	// Replicas from the page, seen through the API.
	b.run(t, "scale to 2", chromedp.SetValue(chromedp.ID("d-replicas"), "2"),
		chromedp.Click(chromedp.CSS(`#scale button[type=submit]`)))
	apitest.Eventually(t, 10*time.Second, "replicas 2", func() bool { return get().Replicas == 2 })

	// A bad quantity in the update: refused beside its field, no new revision.
	b.run(t, "update with a bad cpu", chromedp.SetValue(chromedp.ID("du-cpu"), "lots"),
		chromedp.Click(chromedp.CSS(`#update-deployment button[type=submit]`)))
	b.waitJS(t, "the cpu field's error", `!document.getElementById('du-cpu-error').hidden`)
	if msg := eval[string](t, b, `document.getElementById('du-cpu-error').textContent`); !strings.Contains(msg, "lots") {
		t.Errorf("cpu error = %q; want the API's message naming the value", msg)
	}
	if got := get(); got.Revision != dep.Revision {
		t.Fatalf("a refused update made revision %d", got.Revision)
	}
	// cpu alone changes cpu and keeps mem. The fields are filled by
	// script: chromedp's SetValue failed on the textarea here.
	eval[string](t, b, `document.getElementById('du-cpu').value = '2';
		document.getElementById('du-env').value = "MODEL=small\nGREETING=hello there"`)
	b.run(t, "update cpu, env and max surge", chromedp.SetValue(chromedp.ID("du-surge"), "2"),
		chromedp.Click(chromedp.CSS(`#update-deployment button[type=submit]`)))
	b.waitJS(t, "the rollout said", `document.querySelector('#update-deployment .form-ok')?.textContent.startsWith('Rolling out revision')`)
	got := get()
	if got.Revision != dep.Revision+1 || got.MaxSurge != 2 || got.Env["MODEL"] != "small" || got.Env["GREETING"] != "hello there" ||
		got.Resources["cpu"] != "2" || got.Resources["mem"] != "1g" {
		t.Errorf("after the update: revision %d, max surge %d, env %v, resources %v; want revision %d, 2, the two variables, cpu 2 and mem 1g as it was",
			got.Revision, got.MaxSurge, got.Env, got.Resources, dep.Revision+1)
	}

	// Autoscaling: a bad target beside its field, then a rule, then off.
	b.run(t, "autoscale with a bad target", chromedp.SetValue(chromedp.ID("da-min"), "1"),
		chromedp.SetValue(chromedp.ID("da-max"), "3"), chromedp.SetValue(chromedp.ID("da-target"), "lots"),
		chromedp.Click(chromedp.CSS(`#autoscale button[type=submit]`)))
	b.waitJS(t, "the target's error", `!document.getElementById('da-target-error').hidden`)
	if got := get(); got.Autoscale != nil {
		t.Fatalf("a refused rule was saved: %+v", got.Autoscale)
	}
	b.run(t, "autoscale", chromedp.SetValue(chromedp.ID("da-target"), "2"), chromedp.SetValue(chromedp.ID("da-cooldown"), "5s"),
		chromedp.Click(chromedp.CSS(`#autoscale button[type=submit]`)))
	apitest.Eventually(t, 10*time.Second, "the rule saved", func() bool {
		a := get().Autoscale
		return a != nil && a.Min == 1 && a.Max == 3 && a.Target == "2" && a.Cooldown == "5s"
	})
	b.waitJS(t, "the rule on the page", `document.getElementById('autoscale-state').textContent.startsWith('On: 1 to 3') &&
		!document.getElementById('autoscale-off').hidden`)
	b.shot(t, "deployment-manage")
	b.click(t, "turn autoscaling off", "#autoscale-off")
	apitest.Eventually(t, 10*time.Second, "autoscaling off", func() bool { return get().Autoscale == nil })
	b.waitJS(t, "off on the page", `document.getElementById('autoscale-state').textContent.startsWith('Off')`)

	// Tokens: created and shown once, listed, opening the proxy until revoked.
	b.click(t, "create a token", "#token-create")
	b.waitJS(t, "the new token", `document.getElementById('token-value')?.textContent.startsWith('skvd_')`)
	tok := eval[string](t, b, `document.getElementById('token-value').textContent`)
	var toks v1.List[v1.DeploymentToken]
	d.Do(alice, "GET", "/v1/deployments/"+dep.ID+"/tokens", nil, &toks)
	if len(toks.Items) != 1 {
		t.Fatalf("tokens after create: %+v", toks.Items)
	}
	tokID := toks.Items[0].ID
	b.waitJS(t, "the token listed", `document.querySelector('#token-rows tr[data-id="`+tokID+`"]')?.dataset.status === 'valid'`)
	if code, _ := d.Raw(tok, "GET", "/v1/deployments/"+dep.ID+"/proxy/", nil); code != http.StatusOK {
		t.Errorf("the page's token at the proxy: status %d, want 200", code)
	}
	b.checkNames(t, "deployment with a token")
	b.shot(t, "deployment-token")
	b.click(t, "kept it", "#token-done")
	b.waitJS(t, "the value gone", `document.getElementById('token-new').hidden`)
	b.go_(t, "#/deployments", `document.querySelector('#deployment-rows tr[data-name=llm]') !== null`)
	b.go_(t, "#/deployments/"+dep.ID, `document.querySelector('#token-rows tr[data-id="`+tokID+`"]') !== null`)
	if strings.Contains(eval[string](t, b, `document.body.textContent`), tok) {
		t.Error("the token's value is shown again")
	}
	b.click(t, "revoke it", `#token-rows tr[data-id="`+tokID+`"] button[data-verb=revoke]`)
	b.waitJS(t, "the token revoked", `document.querySelector('#token-rows tr[data-id="`+tokID+`"]').dataset.status === 'revoked'`)
	d.Do(alice, "GET", "/v1/deployments/"+dep.ID+"/tokens", nil, &toks)
	if len(toks.Items) != 1 || toks.Items[0].RevokedAt == nil {
		t.Errorf("tokens after revoke: %+v", toks.Items)
	}
	apitest.Eventually(t, 5*time.Second, "the revoked token refused", func() bool {
		code, _ := d.Raw(tok, "GET", "/v1/deployments/"+dep.ID+"/proxy/", nil)
		return code == http.StatusUnauthorized
	})
	if !b.noCSPViolations(t) {
		t.Error("the page broke its Content-Security-Policy")
	}
}
