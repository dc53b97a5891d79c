package slurm

import (
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// A job runs on a compute node, so the script leaves out what names the
// agent's host: where to bind, and where peers are reached.
func TestScriptLeavesOutTheAgentsAddresses(t *testing.T) {
	spec := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "k0", Session: "s", Image: "sleep",
		ClusterHosts: []string{"main0", "sub1"}}, ClusterAddrs: []string{"10.0.0.1", "10.0.0.2"},
		Port: 8080, BindHost: "10.0.0.1"}
	got := script(spec, "sleep 1", "/bin", "/work", "/status")
	for _, gone := range []string{runtime.EnvBindHost, runtime.EnvClusterAddrs, "10.0.0."} {
		if strings.Contains(got, gone) {
			t.Errorf("the job script names %s:\n%s", gone, got)
		}
	}
	if !strings.Contains(got, runtime.EnvClusterHosts+"='main0,sub1'") && !strings.Contains(got, runtime.EnvClusterHosts+"=main0,sub1") {
		t.Errorf("the job script lacks the cluster hosts:\n%s", got)
	}
}
