package process_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// benchConfigs are the ways a kernel is started that cost differently:
// plain is the agent's own user without cgroups (a non-root dev mode);
// isolated is a root agent's default, a kernel cgroup in every usable
// hierarchy and a uid of the kernel's own, as the isolation tests run.
var benchConfigs = []struct {
	name string
	root bool
	opt  func(*process.Config)
}{
	{"plain", false, func(c *process.Config) {
		c.Cgroups.Disable = true
		c.RunAsAgentUser = true
	}},
	{"isolated", true, func(*process.Config) {}},
}

// BenchmarkCreate measures how long Create takes to return, its program
// running, for DefaultCatalog's sleep on an otherwise idle runtime; each
// kernel is destroyed before the next. forkexec is the floor: os/exec
// starting the same command with the same process group and parent-death
// signal, nothing else. p50_ms and p99_ms are over every Create of the run,
// so give it a -benchtime of a few hundred.
func BenchmarkCreate(b *testing.B) {
	b.Run("forkexec", func(b *testing.B) {
		lat := make([]time.Duration, 0, 1024)
		for b.Loop() {
			start := time.Now()
			cmd := forkExec(b)
			lat = append(lat, time.Since(start))
			b.StopTimer()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			b.StartTimer()
		}
		reportLatency(b, lat)
	})
	for _, bc := range benchConfigs {
		b.Run(bc.name, func(b *testing.B) {
			rt := benchRuntime(b, bc.root, bc.opt)
			lat := make([]time.Duration, 0, 1024)
			for i := 0; b.Loop(); i++ {
				id := domain.KernelID(fmt.Sprintf("bench-%d", i))
				start := time.Now()
				benchCreate(b, rt, id)
				lat = append(lat, time.Since(start))
				b.StopTimer()
				benchDestroy(b, rt, id)
				b.StartTimer()
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkCreateConcurrent starts 50 kernels at once, as the agent does
// for the kernels of one call, and reports each Create's latency; an op is
// the whole batch. They are destroyed, untimed, before the next batch.
// forkexec is again the floor, 50 bare starts at once.
func BenchmarkCreateConcurrent(b *testing.B) {
	const n = 50
	b.Run(fmt.Sprintf("forkexec/%d", n), func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			cmds := make([]*exec.Cmd, n)
			got := make([]time.Duration, n)
			var wg sync.WaitGroup
			for j := range cmds {
				wg.Go(func() {
					start := time.Now()
					cmds[j] = forkExec(b)
					got[j] = time.Since(start)
				})
			}
			wg.Wait()
			lat = append(lat, got...)
			b.StopTimer()
			for _, cmd := range cmds {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
			b.StartTimer()
		}
		reportLatency(b, lat)
	})
	for _, bc := range benchConfigs {
		b.Run(fmt.Sprintf("%s/%d", bc.name, n), func(b *testing.B) {
			rt := benchRuntime(b, bc.root, bc.opt)
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				ids := make([]domain.KernelID, n)
				got := make([]time.Duration, n)
				var wg sync.WaitGroup
				for j := range ids {
					ids[j] = domain.KernelID(fmt.Sprintf("bench-%d-%d", i, j))
					wg.Go(func() {
						start := time.Now()
						benchCreate(b, rt, ids[j])
						got[j] = time.Since(start)
					})
				}
				wg.Wait()
				lat = append(lat, got...)
				b.StopTimer()
				for _, id := range ids {
					wg.Go(func() { benchDestroy(b, rt, id) })
				}
				wg.Wait()
				b.StartTimer()
			}
			reportLatency(b, lat)
		})
	}
}

// forkExec starts what the sleep image runs the way the runtime would
// with nothing of its own around it.
func forkExec(b *testing.B) *exec.Cmd {
	cmd := exec.Command("sh", "-c", `echo "sleep: sleeping until the session is terminated"; exec sleep infinity`, "sleep")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return cmd
}

func benchRuntime(b *testing.B, root bool, opt func(*process.Config)) *process.Runtime {
	b.Helper()
	if root && os.Geteuid() != 0 {
		b.Skip("needs root: kernel uids and cgroups")
	}
	cfg := process.Config{
		DataDir: b.TempDir(),
		Catalog: process.DefaultCatalog(selfExe(b)),
		// The test binary is the watchdog (and the gate) only with childEnv.
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), childEnv + "=1"},
		Cgroups: process.CgroupConfig{Name: uniqueName(b)},
	}
	opt(&cfg)
	rt, err := process.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	if err := rt.Pull(context.Background(), "sleep"); err != nil {
		b.Fatal(err)
	}
	return rt
}

func benchCreate(b *testing.B, rt *process.Runtime, id domain.KernelID) {
	spec := runtime.Spec{KernelSpec: domain.KernelSpec{Kernel: id, Session: domain.SessionID("s-" + id), Image: "sleep"}}
	if err := rt.Create(context.Background(), spec); err != nil {
		b.Error(err)
	}
}

func benchDestroy(b *testing.B, rt *process.Runtime, id domain.KernelID) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := rt.Destroy(ctx, id, 0); err != nil {
		b.Error(err)
	}
}

// reportLatency adds the run's median and 99th percentile, in ms.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
}
