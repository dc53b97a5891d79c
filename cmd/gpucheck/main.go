package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		os.Exit(probe(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:]))
}

// run starts the cluster, runs every check and reports one line a check.
func run(args []string) int {
	fs := flag.NewFlagSet("gpucheck", flag.ContinueOnError)
	bin := fs.String("sokovan", "", "sokovan binary built with cgo (default: sokovan beside gpucheck)")
	hold := fs.Duration("hold", 6*time.Second, "how long a probe keeps its GPU busy")
	keep := fs.Bool("keep", false, "keep the work directory (logs, database) afterwards")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	smi, gpus, err := machineGPUs()
	if err != nil {
		fmt.Printf("gpu-check: no NVIDIA GPU here (%v): nothing checked\n", err)
		return 0
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Println("gpu-check:", err)
		return 1
	}
	if *bin == "" {
		*bin = filepath.Join(filepath.Dir(self), "sokovan")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()

	dir, err := os.MkdirTemp("", "gpucheck-")
	if err != nil {
		fmt.Println("gpu-check:", err)
		return 1
	}
	if *keep {
		fmt.Println("gpu-check: work directory", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	c := &checker{
		sokovan: *bin, self: self, smi: smi, dir: dir, hold: *hold, gpus: gpus,
		libcuda: libcudaPaths(),
	}
	c.describe()
	defer c.stopAll()
	if err := c.startManager(ctx); err != nil {
		fmt.Println("FAIL start manager:", err)
		c.dumpLogs()
		return 1
	}
	c.runChecks(ctx)
	if c.failed > 0 {
		fmt.Printf("gpu-check: %d of %d checks failed\n", c.failed, c.total)
		c.dumpLogs()
		return 1
	}
	fmt.Printf("gpu-check: all %d checks passed\n", c.total)
	return 0
}

// libcudaPaths are where the probe looks for the driver: the loader's own
// search first, then the usual install directories, since a kernel's
// environment may not carry LD_LIBRARY_PATH (the manager refuses LD_*
// names in a session's environment).
func libcudaPaths() []string {
	paths := []string{"libcuda.so.1"}
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		paths = append(paths, filepath.Join(d, "libcuda.so.1"))
	}
	for _, d := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/local/cuda/compat"} {
		paths = append(paths, filepath.Join(d, "libcuda.so.1"))
	}
	return paths
}

// lookSMI finds nvidia-smi by an absolute path, to hand to kernels whose
// PATH may differ from ours.
func lookSMI() (string, error) {
	p, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return "", errors.New("nvidia-smi is not on PATH")
	}
	return filepath.Abs(p)
}
