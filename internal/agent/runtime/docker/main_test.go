package docker_test

import (
	"os"
	"sync"
	"testing"

	"github.com/moby/moby/client"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker/dockertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.Close()
	os.Exit(code)
}

// engineEnv is what the engine tests share (dockertest.Env): a client of
// their own for looking behind the runtime's back, and the registry
// holding the images.
type engineEnv struct {
	host     string
	cli      *client.Client
	registry string // host:port
}

// env is set once, by the first needEngine that finds the engine.
var (
	env     engineEnv
	envOnce sync.Once
)

// image returns the registry reference of one of dockertest.Tags.
func image(tag string) string { return env.registry + "/sokovan-test/kernel:" + tag }

// needEngine returns the shared engine environment, setting it up on first
// use. Without a reachable engine the test is skipped, or fails in CI,
// where the engine is part of what is being tested.
func needEngine(t *testing.T) *engineEnv {
	t.Helper()
	e := dockertest.Need(t)
	envOnce.Do(func() { env = engineEnv{host: e.Host, cli: e.Client, registry: e.Registry} })
	return &env
}
