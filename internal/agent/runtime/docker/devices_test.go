package docker_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestDeviceRequests: a kernel granted devices asks the engine's GPU
// driver for exactly those, by UUID, and is not told the host's indexes
// in CUDA_VISIBLE_DEVICES (inside, CUDA numbers them from zero). The test
// engine has no GPU, so the container is created, not started, and its
// stored HostConfig is what is checked.
func TestDeviceRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.spec("report")
	s.Devices = []domain.DeviceGrant{
		{Device: "GPU-bbb", Index: 3, Slot: "cuda.device", Share: 1000, Memory: 80 << 30},
		{Device: "GPU-aaa", Index: 1, Slot: "cuda.device", Share: 1000, Memory: 80 << 30},
	}
	cfg, host := h.rt.ContainerConfig(s)
	want := []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: []string{"GPU-aaa", "GPU-bbb"}, Capabilities: [][]string{{"gpu"}}}}
	if diff := cmp.Diff(want, host.DeviceRequests); diff != "" {
		t.Errorf("device requests (-want +got):\n%s", diff)
	}
	env := map[string]bool{}
	for _, kv := range cfg.Env {
		env[kv] = true
	}
	if !env["SOKOVAN_DEVICES=GPU-aaa,GPU-bbb"] {
		t.Errorf("env %v lacks SOKOVAN_DEVICES=GPU-aaa,GPU-bbb", cfg.Env)
	}
	for kv := range env {
		if len(kv) > 21 && kv[:21] == "CUDA_VISIBLE_DEVICES=" {
			t.Errorf("container env has host indexes: %s", kv)
		}
	}

	h.Pull(s.Image)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	name := docker.ContainerName(h.cfg.AgentID, s.Kernel)
	// The runtime did not create it, so its Close leaves it: remove it
	// first (cleanups run last-registered first).
	t.Cleanup(func() {
		_, _ = h.env.cli.ContainerRemove(context.Background(), name, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := h.env.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: host}); err != nil {
		t.Fatalf("create: %v", err)
	}
	c, ok := h.inspect(s.Kernel)
	if !ok {
		t.Fatal("created container not found")
	}
	if diff := cmp.Diff(want, c.HostConfig.DeviceRequests); diff != "" {
		t.Errorf("stored device requests (-want +got):\n%s", diff)
	}

	// A kernel with no grants asks for no device.
	_, host = h.rt.ContainerConfig(h.spec("report"))
	if host.DeviceRequests != nil {
		t.Errorf("device requests without grants: %+v", host.DeviceRequests)
	}
}
