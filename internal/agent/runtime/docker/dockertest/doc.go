// Package dockertest gives tests a Docker engine and images to run on it:
// the engine .ci/services.sh starts (or SOKOVAN_TEST_DOCKER_HOST), and a
// registry in the test process holding images of the test kernel program
// (the docker package's testdata/kernel), each running it with other
// arguments (Tags). It is shared by the docker runtime's tests and by tests
// elsewhere that run kernels in containers (deployments on a docker agent).
//
// Without a reachable engine Need skips the test, or fails it where
// CI=true, since there the engine is part of what is tested.
//
// It may import the standard library, the moby Engine API client and
// go-containerregistry; only tests may import it.
//
// Imports: github.com/moby/moby/client/...,
// github.com/google/go-containerregistry/....
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package dockertest
