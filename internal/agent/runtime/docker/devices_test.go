package docker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestDeviceRequests: a kernel granted devices asks the engine's GPU
// driver for exactly those, by UUID, names the same ones in
// NVIDIA_VISIBLE_DEVICES, and is not told the host's indexes in
// CUDA_VISIBLE_DEVICES (inside, CUDA numbers them from zero). A kernel
// granted none gets NVIDIA_VISIBLE_DEVICES=void, overriding the image's
// "all", so an engine whose default runtime is nvidia mounts no GPU. The
// test engine has no GPU, so the containers are created, not started,
// and what the engine stored is what is checked.
func TestDeviceRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.Pull(image("report"))

	granted := h.spec("report")
	granted.Devices = []domain.DeviceGrant{
		{Device: "GPU-bbb", Index: 3, Slot: "cuda.device", Share: 1000, Memory: 80 << 30},
		{Device: "GPU-aaa", Index: 1, Slot: "cuda.device", Share: 1000, Memory: 80 << 30},
	}
	// The kernel's own CUDA_VISIBLE_DEVICES only narrows what the
	// container holds, so it is kept.
	narrowed := h.spec("report")
	narrowed.Devices = granted.Devices
	narrowed.Env = map[string]string{"CUDA_VISIBLE_DEVICES": "1"}
	none := h.spec("report")
	none.Devices = []domain.DeviceGrant{}
	gpuRequest := []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: []string{"GPU-aaa", "GPU-bbb"}, Capabilities: [][]string{{"gpu"}}}}
	for _, tc := range []struct {
		name     string
		spec     runtime.Spec
		requests []container.DeviceRequest
		visible  string
		cuda     string // CUDA_VISIBLE_DEVICES, "" for unset
	}{
		{"granted", granted, gpuRequest, "GPU-aaa,GPU-bbb", ""},
		{"granted, kernel narrows", narrowed, gpuRequest, "GPU-aaa,GPU-bbb", "1"},
		{"none granted", none, nil, "void", ""},
		{"agent hands out no devices", h.spec("report"), nil, "void", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, host := h.rt.ContainerConfig(tc.spec)
			if diff := cmp.Diff(tc.requests, host.DeviceRequests); diff != "" {
				t.Errorf("device requests (-want +got):\n%s", diff)
			}
			if len(tc.spec.Devices) > 0 {
				if got := envOf(cfg.Env)["SOKOVAN_DEVICES"]; got != "GPU-aaa,GPU-bbb" {
					t.Errorf("SOKOVAN_DEVICES = %q, want GPU-aaa,GPU-bbb", got)
				}
			}

			c := createOnly(t, h, tc.spec, cfg, host)
			if diff := cmp.Diff(tc.requests, c.HostConfig.DeviceRequests); diff != "" {
				t.Errorf("stored device requests (-want +got):\n%s", diff)
			}
			// The stored environment is the image's merged with the
			// container's: what the toolkit's hook would read.
			var visible []string
			for _, kv := range c.Config.Env {
				if v, ok := strings.CutPrefix(kv, docker.EnvNVIDIAVisible+"="); ok {
					visible = append(visible, v)
				}
			}
			if diff := cmp.Diff([]string{tc.visible}, visible); diff != "" {
				t.Errorf("stored NVIDIA_VISIBLE_DEVICES (-want +got):\n%s", diff)
			}
			cuda, set := envOf(c.Config.Env)["CUDA_VISIBLE_DEVICES"]
			if tc.cuda == "" && set {
				t.Errorf("container env has CUDA_VISIBLE_DEVICES=%s, want it unset", cuda)
			}
			if tc.cuda != "" && cuda != tc.cuda {
				t.Errorf("CUDA_VISIBLE_DEVICES = %q, want %q", cuda, tc.cuda)
			}
		})
	}
}

// createOnly creates spec's container from cfg and host without starting
// it, and returns what the engine stored.
func createOnly(t *testing.T, h *harness, spec runtime.Spec, cfg *container.Config, host *container.HostConfig) container.InspectResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	name := docker.ContainerName(h.cfg.AgentID, spec.Kernel)
	// The runtime did not create it, so its Close leaves it.
	t.Cleanup(func() {
		_, _ = h.env.cli.ContainerRemove(context.Background(), name, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := h.env.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: host}); err != nil {
		t.Fatalf("create: %v", err)
	}
	c, ok := h.inspect(spec.Kernel)
	if !ok {
		t.Fatal("created container not found")
	}
	return c
}

func envOf(kvs []string) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
