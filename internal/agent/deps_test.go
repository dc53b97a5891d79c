package agent_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

// managerOnly are the packages an agent binary must not link: the agent
// runs on every node, and the manager's logic (and its database drivers)
// does not belong there, nor may a change to them need agents rebuilt.
var managerOnly = []string{
	"github.com/sokovan-go/sokovan/internal/coordinator",
	"github.com/sokovan-go/sokovan/internal/scheduler",
	"github.com/sokovan-go/sokovan/internal/store",
	"github.com/sokovan-go/sokovan/internal/kernelstate",
	"github.com/sokovan-go/sokovan/internal/agentgw",
}

// TestAgentLinksNoManagerPackage lists what the agent daemon and its
// runtimes link, as the go tool resolves it, and fails on any manager
// package (subpackages included).
func TestAgentLinksNoManagerPackage(t *testing.T) {
	t.Parallel()
	gotool := filepath.Join(goruntime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gotool); err != nil {
		t.Skipf("no go tool at %s: %v", gotool, err)
	}
	cmd := exec.Command(gotool, "list", "-deps", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output() // the test runs in internal/agent, so ./... is the agent and its runtimes
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, dep := range deps {
		for _, bad := range managerOnly {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("the agent links %s", dep)
			}
		}
	}
}
