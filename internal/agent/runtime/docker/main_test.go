package docker_test

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

// defaultDockerHost is the engine .ci/services.sh starts; the tests use
// SOKOVAN_TEST_DOCKER_HOST instead when it is set.
const defaultDockerHost = "unix:///tmp/sokovan-docker/docker.sock"

// Tags pushed to the test registry, each running the test kernel program
// (testdata/kernel) with other arguments.
var imageCmds = map[string][]string{
	"exit3":    {"exit", "3"},
	"sleep":    {"sleep"},
	"stubborn": {"stubborn"},
	"report":   {"report"},
	"output":   {"output"},
	"alloc":    {"alloc"},
	"serve":    {"serve"},
	// pulled by TestPullFromRegistry alone, so that its pull is sure to
	// reach the registry.
	"pullonly": {"exit", "0"},
}

// engineEnv is what the engine tests share: a client of their own for
// looking behind the runtime's back, and the registry holding the images.
type engineEnv struct {
	host     string
	cli      *client.Client
	registry string // host:port
	err      error  // why the engine tests cannot run
}

var (
	envOnce sync.Once
	env     engineEnv
	regSrv  *httptest.Server
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env.cli != nil {
		cleanupImages()
		env.cli.Close()
	}
	if regSrv != nil {
		regSrv.Close()
	}
	os.Exit(code)
}

// image returns the registry reference of one of imageCmds' tags.
func image(tag string) string { return env.registry + "/sokovan-test/kernel:" + tag }

// needEngine returns the shared engine environment, setting it up on first
// use. Without a reachable engine the test is skipped, or fails in CI,
// where the engine is part of what is being tested.
func needEngine(t *testing.T) *engineEnv {
	t.Helper()
	envOnce.Do(setupEngine)
	if env.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker engine tests cannot run in CI: %v", env.err)
		}
		t.Skipf("skipping: %v (start one with `bash .ci/services.sh start`, or point SOKOVAN_TEST_DOCKER_HOST at one)", env.err)
	}
	return &env
}

func setupEngine() {
	env.host = os.Getenv("SOKOVAN_TEST_DOCKER_HOST")
	if env.host == "" {
		env.host = defaultDockerHost
	}
	cli, err := client.New(client.WithHost(env.host))
	if err != nil {
		env.err = fmt.Errorf("docker client for %s: %w", env.host, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		env.err = fmt.Errorf("no docker engine answers at %s: %w", env.host, err)
		return
	}
	env.cli = cli
	bin, err := buildKernel()
	if err != nil {
		env.err = err
		return
	}
	regSrv = httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	env.registry = strings.TrimPrefix(regSrv.URL, "http://")
	if err := pushImages(bin); err != nil {
		env.err = err
	}
}

// buildKernel compiles testdata/kernel as a static binary.
func buildKernel() ([]byte, error) {
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
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./testdata/kernel")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the test kernel: %v\n%s", err, msg)
	}
	return os.ReadFile(out)
}

// pushImages pushes one image per imageCmds tag, built FROM scratch: one
// layer holding /kernel, and a config whose entrypoint runs it.
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
	for tag, cmd := range imageCmds {
		cf := baseCfg.DeepCopy()
		// The engine refuses an image without a platform.
		cf.OS, cf.Architecture = "linux", goruntime.GOARCH
		cf.Config = v1.Config{
			Entrypoint: []string{"/kernel"},
			Cmd:        cmd,
			Env:        []string{"PATH=/", "FROM_IMAGE=yes"},
		}
		img, err := mutate.ConfigFile(base, cf)
		if err != nil {
			return err
		}
		ref, err := name.ParseReference(image(tag), name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
	}
	return nil
}

// cleanupImages removes the test images from the engine; each run's
// registry has a new port, so they would pile up otherwise.
func cleanupImages() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for tag := range imageCmds {
		_, _ = env.cli.ImageRemove(ctx, image(tag), client.ImageRemoveOptions{Force: true, PruneChildren: true})
	}
}
