package process_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
)

// childEnv switches the test binary into a kernel's role: tests give it to
// every kernel through Config.BaseEnv and use the binary itself as
// DefaultCatalog's selfExe, as cmd/sokovan does in production.
const childEnv = "SOKOVAN_PROCESS_TEST_CHILD"

// allocArg makes the child allocate and touch memory until it is stopped,
// for the OOM test.
const allocArg = "alloc"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if code, ok := process.RunChild(os.Args[1:]); ok {
			os.Exit(code)
		}
		if len(os.Args) == 2 && os.Args[1] == allocArg {
			allocate()
		}
		if len(os.Args) == 4 && os.Args[1] == agentArg {
			runStandInAgent(os.Args[2], os.Args[3])
		}
		fmt.Fprintf(os.Stderr, "test child: unknown arguments %q\n", os.Args[1:])
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// allocate touches 1 GiB, a page at a time, and exits 0 if nothing stops
// it.
func allocate() {
	var keep [][]byte
	for range 1024 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	fmt.Println("allocated", len(keep), "MiB")
	os.Exit(0)
}
