package process_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

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
		if len(os.Args) == 2 && os.Args[1] == startupArg {
			reportStartup()
		}
		if len(os.Args) == 4 && os.Args[1] == agentArg {
			runStandInAgent(os.Args[2], os.Args[3])
		}
		fmt.Fprintf(os.Stderr, "test child: unknown arguments %q\n", os.Args[1:])
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// startupArg makes the child report what it started with: the
// descriptors it holds beyond stdio, its parent-death signal, working
// directory and credentials, one "key=value" a line.
const startupArg = "startup"

// The parent-death signal is an attribute of each thread, and only the
// main thread's, which exec set up, is the process's; threads the Go
// runtime starts have none. The main goroutine stays on the main thread
// only if locked there during init.
func init() {
	if os.Getenv(childEnv) == "1" && len(os.Args) == 2 && os.Args[1] == startupArg {
		runtime.LockOSThread()
	}
}

func reportStartup() {
	// First, before anything of this process opens a file.
	var fds []string
	for fd := 3; fd < 1024; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			fds = append(fds, strconv.Itoa(fd))
		}
	}
	fmt.Printf("fds=%s\n", strings.Join(fds, ","))
	var sig int
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		fmt.Println("pdeathsig error", err)
		os.Exit(1)
	}
	fmt.Printf("pdeathsig=%d\n", sig)
	wd, err := unix.Getwd()
	if err != nil {
		fmt.Println("cwd error", err)
		os.Exit(1)
	}
	fmt.Printf("cwd=%s\n", wd)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Println("status error", err)
		os.Exit(1)
	}
	for _, line := range strings.Split(string(status), "\n") {
		for _, key := range []string{"Uid", "Gid", "Groups"} {
			if v, ok := strings.CutPrefix(line, key+":"); ok {
				fmt.Printf("%s=%s\n", strings.ToLower(key), strings.Join(strings.Fields(v), ","))
			}
		}
	}
	os.Exit(0)
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
