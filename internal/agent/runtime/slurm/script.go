package slurm

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// knownImages are the catalog images, as the process runtime names them.
var knownImages = []string{"exit:N", "sleep"}

// command resolves spec's image, or its own command line where allowed, to
// the shell command the job runs. The error matches ErrUnknownImage or
// ErrInvalidSpec.
func command(spec runtime.Spec, allowCommand bool) (string, error) {
	if len(spec.Command) > 0 {
		if !allowCommand {
			return "", fmt.Errorf("%w: kernel %s: this agent runs no user commands", runtime.ErrInvalidSpec, spec.Kernel)
		}
		q := make([]string, len(spec.Command))
		for i, a := range spec.Command {
			q[i] = quote(a)
		}
		return "exec " + strings.Join(q, " "), nil
	}
	return imageCommand(spec.Image)
}

// imageCommand is the command line of a catalog image.
func imageCommand(image string) (string, error) {
	switch {
	case image == "sleep":
		return "exec sleep infinity", nil
	case strings.HasPrefix(image, "exit:"):
		code, err := runtime.ParseExitCode(strings.TrimPrefix(image, "exit:"))
		if err != nil {
			return "", &runtime.UnknownImageError{Image: image, Known: slices.Clone(knownImages), Detail: err.Error()}
		}
		return fmt.Sprintf("%s; exit %d", runtime.ExitAfterSh(code), code), nil
	}
	return "", &runtime.UnknownImageError{Image: image, Known: slices.Clone(knownImages)}
}

// quote makes s one word for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// script is the job's batch script. It runs the kernel's command as a
// child so that it outlives it: it records the exit code in the status
// file, which is the kernel's exit code by priority over SLURM's (a
// scancel --signal=TERM reaches both; the shell passes it on and waits).
// The environment is the script's own: sbatch runs it with --export=NONE so
// that nothing of the agent's environment, its token included, reaches a
// kernel.
func script(spec runtime.Spec, cmdline, path, workDir, statusFile string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "# sokovan kernel %s of session %s, image %s\n", spec.Kernel, spec.Session, spec.Image)
	fmt.Fprintf(&b, "export PATH=%s\n", quote(path))
	env := runtime.KernelEnv(spec)
	// SLURM picks the GPUs for --gres and sets CUDA_VISIBLE_DEVICES
	// itself; the manager's count-based request is all it is told.
	delete(env, runtime.EnvCUDAVisible)
	// The job runs on a compute node SLURM picks, not on the agent's host:
	// the agent's address is neither where the kernel can bind nor where
	// its peers reach it.
	delete(env, runtime.EnvBindHost)
	delete(env, runtime.EnvClusterAddrs)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "export %s=%s\n", k, quote(env[k]))
	}
	fmt.Fprintf(&b, "cd %s || exit 126\n", quote(workDir))
	fmt.Fprintf(&b, "status=%s\n", quote(statusFile))
	fmt.Fprintf(&b, "( %s ) &\n", cmdline)
	b.WriteString(`child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
# A trapped signal interrupts wait; wait again until the child is gone.
while :; do
  wait "$child"; code=$?
  kill -0 "$child" 2>/dev/null || break
done
printf '%s\n' "$code" >"$status.tmp" && mv -f "$status.tmp" "$status"
exit "$code"
`)
	return b.String()
}

// sbatchArgs are sbatch's options for spec's job, without the script.
func sbatchArgs(cfg Config, spec runtime.Spec, name, output, dir string) []string {
	args := []string{"--parsable", "--job-name=" + name, "--output=" + output, "--chdir=" + dir,
		"--partition=" + cfg.Partition, "--export=NONE", "--no-requeue"}
	if cfg.Account != "" {
		args = append(args, "--account="+cfg.Account)
	}
	if n := ceilDiv(spec.Slot("cpu"), 1000); n > 0 {
		args = append(args, "--cpus-per-task="+strconv.FormatInt(n, 10))
	}
	if mib := ceilDiv(spec.Slot("mem"), 1<<20); mib > 0 {
		args = append(args, "--mem="+strconv.FormatInt(mib, 10)+"M")
	}
	if n := ceilDiv(spec.Slot("cuda.device"), 1000); n > 0 {
		args = append(args, "--gres=gpu:"+strconv.FormatInt(n, 10))
	}
	// The session's own limit wins over the agent's blanket --slurm-time;
	// sbatch counts whole minutes, and rounding up keeps SLURM from
	// killing the job before the manager's own limit does.
	limit := cfg.TimeLimit
	if spec.TimeLimit > 0 {
		limit = spec.TimeLimit
	}
	if limit > 0 {
		args = append(args, "--time="+strconv.FormatInt(int64(math.Ceil(limit.Minutes())), 10))
	}
	return args
}

// checkGPUs refuses a kernel asking for a fraction of a GPU. SLURM hands
// out whole GPUs through --gres=gpu:N; sharing one needs MPS or shard
// GRES, which each site configures its own way. Rounding a share up to a
// whole GPU would give the kernel more than it is charged for, and the
// agent does not advertise cuda.shares, so only a hand-set capacity
// could send one here.
func checkGPUs(spec runtime.Spec) error {
	if q := spec.Slot("cuda.shares"); q > 0 {
		id, _ := spec.Registry.Lookup("cuda.shares")
		return fmt.Errorf("%w: kernel %s: cuda.shares %s: SLURM hands out whole GPUs only; ask for cuda.device",
			runtime.ErrInvalidSpec, spec.Kernel, spec.Registry.Format(id, q))
	}
	return nil
}

func ceilDiv(q domain.Quantity, unit int64) int64 {
	if q <= 0 {
		return 0
	}
	return (int64(q) + unit - 1) / unit
}
