package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Commands are the SLURM programs the runtime runs. An empty field means
// the program's name, looked up in PATH; tests point them at shims.
type Commands struct {
	Sbatch, Squeue, Scancel, Scontrol, Sinfo string
}

func (c Commands) withDefaults() Commands {
	def := func(s, name string) string {
		if s == "" {
			return name
		}
		return s
	}
	return Commands{
		Sbatch: def(c.Sbatch, "sbatch"), Squeue: def(c.Squeue, "squeue"), Scancel: def(c.Scancel, "scancel"),
		Scontrol: def(c.Scontrol, "scontrol"), Sinfo: def(c.Sinfo, "sinfo"),
	}
}

// cliTimeout bounds one CLI call: a hung slurmctld must not hang a poll.
const cliTimeout = 30 * time.Second

// run runs one SLURM program and returns its stdout; a non-zero exit is an
// error carrying its stderr. Its exit code alone decides failure: sbatch
// may warn on stderr and still submit.
func run(ctx context.Context, prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

// jobRow is one job as squeue lists it.
type jobRow struct {
	ID, Name, State, Reason string
	// Code is the job's exit code as a shell reports it, from squeue's raw
	// wait status.
	Code int
}

// squeueFormat is the one fixed format every poll asks for. exit_code is
// the raw wait status, hence -O rather than -o, which has no field for it.
const squeueFormat = "JobID:|,State:|,Reason:|,exit_code:|,Name:"

// parseSqueue reads squeue output in squeueFormat, keyed by job id. Lines it
// cannot read are skipped: one odd line must not end the poll of the rest.
func parseSqueue(out string) map[string]jobRow {
	rows := make(map[string]jobRow)
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), "|", 5)
		if len(f) < 4 || f[0] == "" {
			continue
		}
		r := jobRow{ID: strings.TrimSpace(f[0]), State: strings.TrimSpace(f[1]), Reason: strings.TrimSpace(f[2])}
		if len(f) == 5 {
			r.Name = strings.TrimSpace(f[4])
		}
		if st, err := strconv.Atoi(strings.TrimSpace(f[3])); err == nil {
			r.Code = waitCode(st)
		}
		rows[r.ID] = r
	}
	return rows
}

// waitCode turns a wait status into a shell's exit code: 128 plus the
// signal for a signalled process.
func waitCode(status int) int {
	if sig := status & 0x7f; sig != 0 {
		return 128 + sig
	}
	return (status >> 8) & 0xff
}

// scontrolJob is what `scontrol show job -o` says of a job.
type scontrolJob struct {
	State, Reason string
	Code          int
}

// errUnknownJob: slurmctld does not know the job (purged after MinJobAge,
// or never there).
var errUnknownJob = errors.New("job unknown to slurmctld")

// parseScontrolJob reads one line of `scontrol show job -o`. ExitCode is
// "code:signal".
func parseScontrolJob(out string) (scontrolJob, error) {
	var j scontrolJob
	found := false
	for _, kv := range strings.Fields(out) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch k {
		case "JobState":
			j.State, found = v, true
		case "Reason":
			j.Reason = v
		case "ExitCode":
			c, s, _ := strings.Cut(v, ":")
			code, _ := strconv.Atoi(c)
			sig, _ := strconv.Atoi(s)
			if sig != 0 {
				j.Code = 128 + sig
			} else {
				j.Code = code
			}
		}
	}
	if !found {
		return j, fmt.Errorf("scontrol show job: no JobState in %q", strings.TrimSpace(out))
	}
	return j, nil
}

// Capacity is what the partition's nodes offer, in the agent's slot
// names: "cpu", "mem" (in MiB, "1024m") and "cuda.device" when any node
// has gpu GRES.
func Capacity(ctx context.Context, cmds Commands, partition string) (map[string]string, error) {
	cmds = cmds.withDefaults()
	out, err := run(ctx, cmds.Sinfo, "-h", "-N", "-p", partition, "-o", "%N|%c|%m|%G|%t")
	if err != nil {
		return nil, fmt.Errorf("slurm capacity: %w", err)
	}
	return parseCapacity(out, partition)
}

// parseCapacity sums sinfo's per-node lines, counting each node once (a
// node in several partitions is listed once per -p anyway) and leaving out
// nodes that cannot take jobs.
func parseCapacity(out, partition string) (map[string]string, error) {
	seen := make(map[string]bool)
	var cpus, memMiB, gpus int64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 5 || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		state := strings.TrimRight(f[4], "*~#!%$@^-")
		switch state {
		case "down", "drain", "drained", "fail", "failing", "inval", "maint", "unk", "futr":
			continue
		}
		c, _ := strconv.ParseInt(f[1], 10, 64)
		m, _ := strconv.ParseInt(f[2], 10, 64)
		cpus += c
		memMiB += m
		gpus += gresGPUs(f[3])
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("slurm capacity: partition %q lists no nodes", partition)
	}
	caps := map[string]string{"cpu": strconv.FormatInt(cpus, 10), "mem": strconv.FormatInt(memMiB, 10) + "m"}
	if gpus > 0 {
		caps["cuda.device"] = strconv.FormatInt(gpus, 10)
	}
	return caps, nil
}

// gresGPUs counts the gpus in a GRES list such as "gpu:a100:4(S:0-1),mps:100".
func gresGPUs(gres string) int64 {
	var n int64
	for _, g := range strings.Split(gres, ",") {
		g, _, _ = strings.Cut(g, "(")
		parts := strings.Split(g, ":")
		if len(parts) < 2 || parts[0] != "gpu" {
			continue
		}
		if c, err := strconv.ParseInt(parts[len(parts)-1], 10, 64); err == nil {
			n += c
		}
	}
	return n
}
