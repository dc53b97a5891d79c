package process_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/runtimetest"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// agentArg makes the test binary a stand-in agent for the orphan test: it
// starts a runtime on DIR, runs one exit:0 kernel that sleeps for minutes,
// prints "kernel PID" and waits to be killed.
const agentArg = "agent"

func runStandInAgent(dir, cgroups string) {
	rt, err := process.New(process.Config{
		DataDir: dir, Catalog: process.DefaultCatalog(os.Args[0]),
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), childEnv + "=1"},
		Cgroups: process.CgroupConfig{Disable: cgroups == "off", Name: "sokovan-orphan-" + filepath.Base(dir)},
	})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	ctx := context.Background()
	if err := rt.Pull(ctx, "exit:0"); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	spec := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: "orphan-k0", Session: "orphan", Image: "exit:0",
		Env: map[string]string{"SOKOVAN_EXIT_AFTER": "600"}}}
	if err := rt.Create(ctx, spec); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	pid, _ := rt.PID(spec.Kernel)
	fmt.Println("kernel", pid)
	select {}
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid …"; comm may hold spaces, so cut at ")".
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 {
			if pp, _ := strconv.Atoi(f[1]); pp == pid {
				out = append(out, p)
			}
		}
	}
	return out
}

func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z") // a zombie is gone but for its parent's wait
}

// TestKernelGrandchildrenDieWithTheAgent: kill -9 of the agent ends not
// only each kernel's main process (its parent-death signal) but also what
// that process started: exit:N is a shell whose sleep is such a grandchild.
func TestKernelGrandchildrenDieWithTheAgent(t *testing.T) {
	t.Parallel()
	for _, cg := range []string{"on", "off"} {
		t.Run("cgroups "+cg, func(t *testing.T) {
			t.Parallel()
			dir, err := os.MkdirTemp("", "sokovan-orphan-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			cmd := exec.Command(os.Args[0], agentArg, dir, cg)
			cmd.Env = append(os.Environ(), childEnv+"=1")
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "kernel ") {
				t.Fatalf("stand-in agent: %q, %v", line, err)
			}
			kpid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "kernel ")))
			var sleepers []int
			runtimetest.Eventually(t, waitLimit, "the kernel's sleep to start", func() bool {
				sleepers = children(kpid)
				return len(sleepers) > 0
			})
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for _, p := range append([]int{kpid}, sleepers...) {
				for alive(p) {
					if time.Now().After(deadline) {
						_ = syscall.Kill(p, syscall.SIGKILL)
						t.Fatalf("process %d of the kernel outlived the agent's kill -9", p)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
}
