package docker

import (
	"github.com/moby/moby/api/types/container"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
)

// Abandon stops the runtime's goroutines and drops its engine connection
// without touching a container: what a crash of the agent leaves behind,
// for the tests of Recover.
func (r *Runtime) Abandon() {
	r.images.Close()
	r.kernels.Close()
	r.cancelBG()
	r.watchers.Wait()
	_ = r.cli.Close()
}

// ContainerConfig is containerConfig for a kernel without cluster SSH, so
// a test can create the container itself where starting it cannot work
// (device requests on an engine without GPUs).
func (r *Runtime) ContainerConfig(spec runtime.Spec) (*container.Config, *container.HostConfig) {
	return r.containerConfig(spec, "")
}
