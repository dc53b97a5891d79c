package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/client"
)

// DefaultHost is the engine .ci/services.sh starts; SOKOVAN_TEST_DOCKER_HOST
// names another.
const DefaultHost = "unix:///tmp/sokovan-docker/docker.sock"

// Tags are the images pushed to the test registry, each running the test
// kernel program with these arguments (see testdata/kernel/main.go).
var Tags = map[string][]string{
	"exit3":    {"exit", "3"},
	"sleep":    {"sleep"},
	"stubborn": {"stubborn"},
	"report":   {"report"},
	"output":   {"output"},
	"alloc":    {"alloc"},
	// serves HTTP on $SOKOVAN_BIND_HOST:$SOKOVAN_PORT, /health included,
	// answering with its kernel id.
	"serve": {"serve"},
	// pulled by the runtime's TestPullFromRegistry alone, so that its pull
	// is sure to reach the registry.
	"pullonly": {"exit", "0"},
}

// Env is the engine and registry the tests share.
type Env struct {
	// Host is the engine's address, as DOCKER_HOST spells it.
	Host string
	// Client is a client of the tests' own, for looking behind a runtime's
	// back.
	Client *client.Client
	// Registry is the test registry's host:port.
	Registry string
}

// Image is the registry reference of one of Tags.
func (e *Env) Image(tag string) string { return e.Registry + "/sokovan-test/kernel:" + tag }

var (
	once   sync.Once
	env    Env
	envErr error // why the engine tests cannot run
	regSrv *httptest.Server
)

// Need returns the shared environment, setting it up on first use: the
// test kernel is built and its images pushed once per test binary.
func Need(t testing.TB) *Env {
	t.Helper()
	once.Do(setup)
	if envErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker engine tests cannot run in CI: %v", envErr)
		}
		t.Skipf("skipping: %v (start one with `bash .ci/services.sh start`, or point SOKOVAN_TEST_DOCKER_HOST at one)", envErr)
	}
	return &env
}

// Close removes the test images from the engine (each run's registry has
// a new port, so they would pile up otherwise) and stops the registry. A
// TestMain calls it after m.Run.
func Close() {
	if env.Client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for tag := range Tags {
			_, _ = env.Client.ImageRemove(ctx, env.Image(tag), client.ImageRemoveOptions{Force: true, PruneChildren: true})
		}
		env.Client.Close()
	}
	if regSrv != nil {
		regSrv.Close()
	}
}

func setup() {
	env.Host = os.Getenv("SOKOVAN_TEST_DOCKER_HOST")
	if env.Host == "" {
		env.Host = DefaultHost
	}
	cli, err := client.New(client.WithHost(env.Host))
	if err != nil {
		envErr = fmt.Errorf("docker client for %s: %w", env.Host, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		envErr = fmt.Errorf("no docker engine answers at %s: %w", env.Host, err)
		return
	}
	env.Client = cli
	bin, err := buildKernel()
	if err != nil {
		envErr = err
		return
	}
	regSrv = httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	env.Registry = strings.TrimPrefix(regSrv.URL, "http://")
	if err := pushImages(bin); err != nil {
		envErr = err
	}
}

// buildKernel compiles the docker package's testdata/kernel as a static
// binary. The source is found beside this file, so any package's tests
// may build it from their own directory.
func buildKernel() ([]byte, error) {
	_, self, _, ok := goruntime.Caller(0)
	if !ok {
		return nil, fmt.Errorf("building the test kernel: cannot find its source")
	}
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "kernel")
	dir, err := os.MkdirTemp("", "sokovan-docker-kernel-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// go test puts its own GOROOT/bin first in the test's PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("building the test kernel needs the go tool: %w", err)
	}
	out := filepath.Join(dir, "kernel")
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the test kernel: %v\n%s", err, msg)
	}
	return os.ReadFile(out)
}

// pushImages pushes one image per tag, built FROM scratch: one layer
// holding /kernel, and a config whose entrypoint runs it.
func pushImages(bin []byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "kernel", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layerTar := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	base, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer})
	if err != nil {
		return err
	}
	baseCfg, err := base.ConfigFile()
	if err != nil {
		return err
	}
	for tag, cmd := range Tags {
		cf := baseCfg.DeepCopy()
		// The engine refuses an image without a platform.
		cf.OS, cf.Architecture = "linux", goruntime.GOARCH
		cf.Config = v1.Config{
			Entrypoint: []string{"/kernel"},
			Cmd:        cmd,
			// As the CUDA base images do: the runtime must hide the GPUs
			// from a kernel granted none all the same.
			Env: []string{"PATH=/", "FROM_IMAGE=yes", "NVIDIA_VISIBLE_DEVICES=all"},
		}
		img, err := mutate.ConfigFile(base, cf)
		if err != nil {
			return err
		}
		ref, err := name.ParseReference(env.Image(tag), name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
	}
	return nil
}
