package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// cudaDevice is one device as CUDA enumerates it inside a kernel.
type cudaDevice struct {
	Ordinal int    `json:"ordinal"`
	UUID    string `json:"uuid"`
	Memory  int64  `json:"memory"`
	dev     int
}

// formatUUID spells a CUDA UUID as NVML and nvidia-smi do.
func formatUUID(u [16]byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// report is what a probe prints, on one line after reportPrefix, for the
// checker to read from the session's log.
type report struct {
	PID       int               `json:"pid"`
	Env       map[string]string `json:"env"`
	CUDA      []cudaDevice      `json:"cuda"`
	CUDAError string            `json:"cuda_error,omitempty"`
	// SMI is what `nvidia-smi -L` lists from inside the kernel.
	SMI      []string `json:"smi"`
	SMIError string   `json:"smi_error,omitempty"`
	// Used is the device the probe allocated memory on and ran work on.
	Used     string `json:"used,omitempty"`
	UseError string `json:"use_error,omitempty"`
}

const reportPrefix = "GPUCHECK "

// probeBytes is what a probe allocates: enough to stand out in
// nvidia-smi's per-process memory, little enough for any GPU.
const probeBytes = 64 << 20

// probe runs inside a kernel.
func probe(args []string) int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	hold := fs.Duration("hold", 5*time.Second, "how long to keep the GPU context and memory")
	smi := fs.String("smi", "nvidia-smi", "nvidia-smi to run")
	libs := fs.String("libcuda", "libcuda.so.1", "comma-separated libcuda paths to try, in order")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	r := report{PID: os.Getpid(), Env: map[string]string{}}
	for _, k := range []string{"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "SOKOVAN_DEVICES", "SOKOVAN_DEVICE_MEM"} {
		if v, ok := os.LookupEnv(k); ok {
			r.Env[k] = v
		}
	}
	if out, err := exec.Command(*smi, "-L").CombinedOutput(); err != nil {
		r.SMIError = fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(out)))
	} else {
		r.SMI = nonEmptyLines(string(out))
	}
	drv, err := openCUDA(strings.Split(*libs, ","))
	if err == nil {
		r.CUDA, err = drv.devices()
	}
	if err != nil {
		r.CUDAError = err.Error()
	}
	if len(r.CUDA) > 0 {
		if err := drv.use(r.CUDA[0], probeBytes); err != nil {
			r.UseError = err.Error()
		} else {
			r.Used = r.CUDA[0].UUID
		}
	}
	b, _ := json.Marshal(r)
	fmt.Printf("%s%s\n", reportPrefix, b)
	if r.Used != "" {
		time.Sleep(*hold)
	}
	return 0
}

func nonEmptyLines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
