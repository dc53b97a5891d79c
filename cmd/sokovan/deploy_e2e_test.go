package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestDeployCLIAgainstDevMode drives `sokovan deploy` against `sokovan
// dev`, with real http-echo kernels behind the deployment proxy.
func TestDeployCLIAgainstDevMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev mode with real kernels")
	}
	t.Parallel()
	d := startDevBinary(t, 2)
	url, token, run, mustRun := d.url, d.token, d.run, d.mustRun

	out := mustRun("deploy", "create", "echo", "--image", "http-echo", "--replicas", "2", "--cpu", "1", "--mem", "64m",
		"--health-interval", "200ms", "--health-initial-delay", "0s", "--health-failure-threshold", "2", "--wait", "60s")
	if !strings.Contains(out, "READY") {
		t.Fatalf("create --wait did not report READY:\n%s", out)
	}
	if out := mustRun("deploy", "ls"); !strings.Contains(out, "echo") || !strings.Contains(out, "2/2") {
		t.Errorf("ls:\n%s", out)
	}
	req, _ := http.NewRequest("GET", url+"/v1/deployments/echo/proxy/generate", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Sokovan-Kernel") == "" {
		t.Errorf("through the proxy: %d, kernel %q", resp.StatusCode, resp.Header.Get("X-Sokovan-Kernel"))
	}
	if out := mustRun("deploy", "update", "echo", "--autoscale-min", "1", "--autoscale-max", "3", "--autoscale-target", "4"); !strings.Contains(out, "revision 1") {
		t.Errorf("update --autoscale-*:\n%s", out)
	}
	if out := mustRun("deploy", "show", "echo"); !strings.Contains(out, "autoscale:    1 to 3 replicas at 4 requests") {
		t.Errorf("show with autoscaling:\n%s", out)
	}
	mustRun("deploy", "update", "echo", "--autoscale-max", "0")
	if out := mustRun("deploy", "scale", "echo", "1"); !strings.Contains(out, "1 replicas") {
		t.Errorf("scale:\n%s", out)
	}
	if out := mustRun("deploy", "routes", "echo"); !strings.Contains(out, "HEALTHY") {
		t.Errorf("routes:\n%s", out)
	}
	if out := mustRun("deploy", "history", "echo"); !strings.Contains(out, "CheckPendingDeployment") ||
		!strings.Contains(out, "HealthCheckRoute") {
		t.Errorf("history:\n%s", out)
	}
	var shown v1.Deployment
	if err := json.Unmarshal([]byte(mustRun("deploy", "show", "echo", "-o", "json")), &shown); err != nil || shown.Name != "echo" {
		t.Errorf("show -o json: %v %+v", err, shown)
	}
	if out, code := run("deploy", "scale", "echo", "65"); code == 0 || !strings.Contains(out, "replicas") {
		t.Errorf("scale 65: exit %d\n%s", code, out)
	}
	if out, code := run("deploy", "create", "bad", "--image", "nope"); code == 0 || !strings.Contains(out, "image") {
		t.Errorf("create with an unknown image: exit %d\n%s", code, out)
	}
	mustRun("deploy", "rm", "echo")
	for deadline := time.Now().Add(30 * time.Second); ; {
		var d v1.Deployment
		if json.Unmarshal([]byte(mustRun("deploy", "show", "echo", "-o", "json")), &d) == nil && d.Status == "DESTROYED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("echo not DESTROYED:\n%s", mustRun("deploy", "show", "echo"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := d.stop(); err != nil {
		t.Error(err)
	}
}
