package admit_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

const module = "github.com/sokovan-go/sokovan/"

// mayImport are the project packages doc.go lets admission import; the
// standard library is allowed besides.
var mayImport = []string{
	module + "internal/clock",
	module + "internal/domain",
	module + "internal/hook",
	module + "internal/store",
}

// neverLinks are what admission must not link even through another
// package: its callers (the API, deployments, the simulator), the
// coordinator it sits beside, and the engines behind its Store port.
var neverLinks = []string{
	module + "internal/api",
	module + "internal/deploy",
	module + "internal/simulate",
	module + "internal/coordinator",
	module + "internal/store/sqlstore",
	module + "internal/store/sqlite",
	module + "internal/store/postgres",
}

// goList runs `go list` in this package's directory with args.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gotool := filepath.Join(goruntime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gotool); err != nil {
		t.Skipf("no go tool at %s: %v", gotool, err)
	}
	cmd := exec.Command(gotool, append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	got := strings.Fields(string(out))
	if len(got) == 0 {
		t.Fatalf("go list %s listed nothing", strings.Join(args, " "))
	}
	return got
}

// TestImportsWhatDocAllows holds the package's own imports to doc.go's
// list, as the go tool resolves them.
func TestImportsWhatDocAllows(t *testing.T) {
	t.Parallel()
	for _, imp := range goList(t, "-f", `{{join .Imports "\n"}}`, ".") {
		if !strings.HasPrefix(imp, module) {
			if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("admit imports %s, outside the standard library", imp)
			}
			continue
		}
		allowed := false
		for _, ok := range mayImport {
			allowed = allowed || imp == ok
		}
		if !allowed {
			t.Errorf("admit imports %s, which doc.go does not allow", imp)
		}
	}
}

// TestLinksNoCaller fails when anything admission links, directly or
// not, is one of its callers or an engine.
func TestLinksNoCaller(t *testing.T) {
	t.Parallel()
	for _, dep := range goList(t, "-deps", ".") {
		for _, bad := range neverLinks {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("admit links %s", dep)
			}
		}
	}
}
