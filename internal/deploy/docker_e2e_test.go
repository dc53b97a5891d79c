package deploy_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker/dockertest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// startDockerAgent runs an agent with the docker runtime in the host's
// network on the test engine, registered with e's manager, until the
// test ends; its Run closes the runtime, which removes its containers.
func (e *devEnv) startDockerAgent(dk *dockertest.Env, id string) {
	e.t.Helper()
	a, err := agent.New(agent.Config{ID: domain.AgentID(id), ResourceGroup: "default", Manager: e.url,
		Token: e.parts.AgentToken, Listen: "127.0.0.1:0", Capacity: map[string]string{"cpu": "8", "mem": "8g"},
		Runtime: "docker", AllowsCommand: true})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := docker.New(ctx, docker.Config{Host: dk.Host, AgentID: id, DataDir: filepath.Join(e.t.TempDir(), "docker"),
		Sink: a.Sink, NetworkMode: docker.NetworkHost, CloseGrace: time.Second})
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, rt) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("docker agent %s stopped with %v", id, err)
		}
	})
}

// TestDeploymentOnDockerAgent: a deployment of a container image on a
// docker agent in the host's network serves: its two routes' kernels,
// each a container answering HTTP on the port the agent gave it, report
// their ports, pass their health checks and reach HEALTHY, and requests
// through the deployment's proxy reach both. Destroying it removes the
// containers and frees every slot.
func TestDeploymentOnDockerAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dev mode and containers")
	}
	dk := dockertest.Need(t)
	e := startDevAgents(t, 0)
	const agentID = "docker-agent"
	e.startDockerAgent(dk, agentID)
	e.waitAlive(1)

	var created v1.Deployment
	if code := e.call("POST", "/v1/deployments", v1.CreateDeploymentRequest{Name: "served", Image: dk.Image("serve"),
		Resources: map[string]string{"cpu": "1", "mem": "64m"}, Replicas: intp(2), HealthCheck: fastHealth()}, &created); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	id := created.ID
	// Pulling into a vfs engine and starting two containers takes longer
	// than two processes; waitServing's bound is enough for that.
	d := e.waitServing(id, 2)
	for _, r := range d.Routes {
		if host, _, err := net.SplitHostPort(r.Endpoint); err != nil || host != "127.0.0.1" {
			t.Errorf("route %s serves at %q, want the docker agent's host loopback", r.ID, r.Endpoint)
		}
	}

	hc := &http.Client{Timeout: 5 * time.Second}
	seen := map[string]int{}
	for range 20 {
		k, _, err := e.through(hc, id, "/v1/infer")
		if err != nil {
			t.Fatalf("through the proxy: %v", err)
		}
		seen[k]++
	}
	if len(seen) != 2 {
		t.Fatalf("20 requests reached kernels %v, want both replicas", seen)
	}
	containers := func() int {
		res, err := dk.Client.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", docker.LabelAgent+"="+agentID)})
		if err != nil {
			t.Fatalf("list containers: %v", err)
		}
		for _, c := range res.Items {
			if _, ok := seen[c.Labels[docker.LabelKernel]]; !ok {
				t.Errorf("container %s of kernel %s answered no request", c.ID, c.Labels[docker.LabelKernel])
			}
		}
		return len(res.Items)
	}
	if n := containers(); n != 2 {
		t.Errorf("%d containers of the docker agent, want the 2 replicas'", n)
	}

	if code := e.call("DELETE", "/v1/deployments/"+id, nil, &v1.Deployment{}); code != http.StatusAccepted {
		t.Fatalf("destroy: %d", code)
	}
	e.waitFor(30*time.Second, "DESTROYED", func() (bool, string) {
		d := e.show(id)
		return d.Status == "DESTROYED" && len(d.Routes) == 0, summary(d)
	})
	e.checkReleased()
	e.waitFor(30*time.Second, "the replicas' containers removed", func() (bool, string) {
		n := containers()
		return n == 0, fmt.Sprintf("%d containers", n)
	})
}
