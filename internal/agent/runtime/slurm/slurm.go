package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// Config configures a SLURM runtime.
type Config struct {
	// WorkDir holds a directory per kernel: the job script, its output
	// (output.log), its status file, the state file Recover reads and work/,
	// the job's working directory. Jobs read and write it from the compute
	// nodes, so on a cluster of several nodes it must be on a shared file
	// system at the same path. Required.
	WorkDir string
	// Partition jobs are submitted to. Required.
	Partition string
	// Account, when set, is sbatch's --account.
	Account string
	// JobPrefix starts every job's name, followed by the kernel id; empty
	// means "sokovan-".
	JobPrefix string
	// Commands are the SLURM programs' paths.
	Commands Commands
	// PollInterval is how often one squeue call polls every job; zero
	// means 2s.
	PollInterval time.Duration
	// LostGrace is how long a job may be unknown to squeue and scontrol,
	// with no status file, before its kernel ends as lost; zero means 60s.
	LostGrace time.Duration
	// TimeLimit, when set, is the --time (rounded up to minutes) of jobs
	// whose session has no time limit of its own.
	TimeLimit time.Duration
	// AllowCommand lets Spec.Command replace an image's command line.
	AllowCommand bool
	// Path is PATH inside jobs; empty means /usr/local/bin:/usr/bin:/bin.
	Path string
	// CloseGrace is the grace Close gives each kernel; zero means 5s.
	CloseGrace time.Duration
	// Sink receives events; nil discards them.
	Sink runtime.Sink
	// Now stamps states and events; nil means time.Now.
	Now func() time.Time
	// Log receives what an operator should know; nil discards it.
	Log *slog.Logger
}

// Files in a kernel's directory.
const (
	stateFile  = "job.json"
	scriptFile = "job.sh"
	workSubdir = "work"
)

// statusFile is the file the job script writes the kernel's exit code to,
// named as seed 002's plugin names it.
func statusFile(id domain.KernelID) string { return "run-" + string(id) + ".status" }

// lostCode is the exit code of a kernel whose job SLURM has lost.
const lostCode = 255

var _ runtime.Runtime = (*Runtime)(nil)

// Runtime runs kernels as SLURM jobs. See the package doc.
type Runtime struct {
	cfg  Config
	cmds Commands
	now  func() time.Time
	log  *slog.Logger
	out  *runtime.Outbox

	kernels *runtime.Table[*job]
	images  *runtime.Images

	// mu guards every job's fields once its kernel is in the table, and
	// ids.
	mu sync.Mutex
	// ids are the kernels this runtime put in the table; see kernelsAll.
	ids map[domain.KernelID]struct{}

	stopLoop context.CancelFunc
	loopDone chan struct{}
}

// job is the runtime's part of a kernel.
type job struct {
	dir       string
	submitted chan struct{} // closed once sbatch has answered, either way
	submitErr error         // written before submitted is closed
	id        string        // SLURM's job id; empty until submitted
	// note says why a job that has not run waits ("queued in SLURM:
	// Resources").
	note string
	// missingSince is when the job was first found unknown to SLURM.
	missingSince time.Time
}

type kernel = runtime.Kernel[*job]

// state is what the state file keeps of a job, for Recover.
type state struct {
	Kernel    domain.KernelID  `json:"kernel"`
	Session   domain.SessionID `json:"session"`
	Image     string           `json:"image"`
	Name      string           `json:"name"`
	JobID     string           `json:"job_id,omitempty"`
	StartedAt time.Time        `json:"started_at,omitzero"`
}

// New returns a runtime and starts its poller; Close stops it.
func New(cfg Config) (*Runtime, error) {
	if cfg.WorkDir == "" {
		return nil, errors.New("slurm runtime: WorkDir is required")
	}
	if cfg.Partition == "" {
		return nil, errors.New("slurm runtime: Partition is required")
	}
	dir, err := runtime.PrivateDir(cfg.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("slurm runtime: %w", err)
	}
	cfg.WorkDir = dir
	if cfg.JobPrefix == "" {
		cfg.JobPrefix = "sokovan-"
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.LostGrace <= 0 {
		cfg.LostGrace = 60 * time.Second
	}
	if cfg.Path == "" {
		cfg.Path = "/usr/local/bin:/usr/bin:/bin"
	}
	if cfg.CloseGrace <= 0 {
		cfg.CloseGrace = 5 * time.Second
	}
	cfg.Now, cfg.Log = runtime.ClockAndLog(cfg.Now, cfg.Log)
	out := runtime.NewOutbox(cfg.Sink)
	r := &Runtime{cfg: cfg, cmds: cfg.Commands.withDefaults(), now: cfg.Now, log: cfg.Log, out: out,
		kernels: runtime.NewTable[*job](out, cfg.Now), images: runtime.NewImages(out, cfg.Now), ids: make(map[domain.KernelID]struct{}), loopDone: make(chan struct{})}
	// The poller's context is the runtime's own, ended by Close.
	ctx, cancel := context.WithCancel(context.Background())
	r.stopLoop = cancel
	go r.loop(ctx)
	return r, nil
}

func (r *Runtime) kernelDir(id domain.KernelID) string {
	return filepath.Join(r.cfg.WorkDir, string(id))
}

func (r *Runtime) jobName(id domain.KernelID) string { return r.cfg.JobPrefix + string(id) }

// Pull checks that the image is one the runtime can run: there is nothing
// to fetch, as jobs run programs the compute nodes have.
func (r *Runtime) Pull(ctx context.Context, image string) error {
	return r.images.Pull(ctx, image, func(context.Context) (string, error) {
		if _, err := imageCommand(image); err != nil {
			return "", err
		}
		return "catalog image", nil
	})
}

// Create submits the kernel's job and returns once sbatch has taken it;
// kernel_started follows when SLURM runs it. A second Create of the id
// waits for the first one's submission and shares its outcome.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if err := checkGPUs(spec); err != nil {
		return err
	}
	cmdline, err := command(spec, r.cfg.AllowCommand)
	if err != nil {
		return err
	}
	r.mu.Lock()
	k, fresh, err := r.kernels.Claim(spec.Kernel, spec.Session, spec.Image, func() error {
		if !r.images.Have(spec.Image) {
			return fmt.Errorf("%w: %s", runtime.ErrImageNotPulled, spec.Image)
		}
		return nil
	})
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if !fresh {
		j := k.Own
		r.mu.Unlock()
		select {
		case <-j.submitted:
			return j.submitErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	j := &job{dir: r.kernelDir(spec.Kernel), submitted: make(chan struct{})}
	k.Own = j
	r.ids[spec.Kernel] = struct{}{}
	r.mu.Unlock()

	// Detached from ctx: sbatch killed after it submitted would leave a
	// job nobody knows; cliTimeout bounds it instead.
	id, err := r.submit(context.WithoutCancel(ctx), spec, cmdline, j.dir)
	if err != nil {
		err = fmt.Errorf("kernel %s: %w: %w", spec.Kernel, runtime.ErrCreateFailed, err)
	}
	r.mu.Lock()
	j.id, j.submitErr = id, err
	if err == nil {
		j.note = "queued in SLURM: submitted"
	}
	close(j.submitted)
	r.mu.Unlock()
	if err != nil {
		r.kernels.Fail(k, err)
		_ = os.RemoveAll(j.dir)
		return err
	}
	r.log.Info("slurm runtime: job submitted", "kernel", spec.Kernel, "job", id)
	return nil
}

// submit writes the kernel's directory and submits its job, returning the
// job id. The state file is written before sbatch and again after, so an
// agent that crashes in between finds the job by its name.
func (r *Runtime) submit(ctx context.Context, spec runtime.Spec, cmdline, dir string) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	work := filepath.Join(dir, workSubdir)
	if err := os.MkdirAll(work, 0o700); err != nil {
		return "", err
	}
	sc := filepath.Join(dir, scriptFile)
	body := script(spec, cmdline, r.cfg.Path, work, filepath.Join(dir, statusFile(spec.Kernel)))
	if err := os.WriteFile(sc, []byte(body), 0o700); err != nil {
		return "", err
	}
	st := state{Kernel: spec.Kernel, Session: spec.Session, Image: spec.Image, Name: r.jobName(spec.Kernel)}
	if err := writeState(dir, st); err != nil {
		return "", err
	}
	args := append(sbatchArgs(r.cfg, spec, st.Name, filepath.Join(dir, runtime.LogFile), work), sc)
	out, err := run(ctx, r.cmds.Sbatch, args...)
	if err != nil {
		return "", err
	}
	// --parsable prints "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("sbatch answered %q, not a job id", strings.TrimSpace(out))
	}
	st.JobID = id
	if err := writeState(dir, st); err != nil {
		// The job runs; only Recover would miss it. Cancel rather than
		// leave a job no agent could find again.
		_, _ = run(ctx, r.cmds.Scancel, id)
		return "", err
	}
	return id, nil
}

func writeState(dir string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	return st, err
}

// readStatus reads the exit code the job script recorded.
func readStatus(dir string, id domain.KernelID) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, statusFile(id)))
	if err != nil {
		return 0, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false
	}
	return code, true
}

// writeStatus records SLURM's code where the script did not, so the status
// file is the one place an ended kernel's code is found.
func (r *Runtime) writeStatus(dir string, id domain.KernelID, code int) {
	if err := os.WriteFile(filepath.Join(dir, statusFile(id)), []byte(strconv.Itoa(code)+"\n"), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Warn("slurm runtime: cannot write a status file", "kernel", id, "err", err)
	}
}

// Destroy cancels the kernel's job: scancel --signal=TERM, then scancel
// once grace has passed (at once when grace is zero or ctx ends). A job
// still queued is cancelled at once, since nothing of it runs.
func (r *Runtime) Destroy(ctx context.Context, id domain.KernelID, grace time.Duration) error {
	k := r.kernels.Get(id)
	if k == nil {
		return nil
	}
	r.mu.Lock()
	j := k.Own
	r.mu.Unlock()
	if j == nil {
		return nil
	}
	select {
	case <-j.submitted:
	case <-ctx.Done():
		return fmt.Errorf("destroy kernel %s: %w", id, ctx.Err())
	}
	if j.submitErr != nil {
		return nil
	}
	if r.kernels.Creating(k) {
		if _, err := run(ctx, r.cmds.Scancel, j.id); err != nil {
			return fmt.Errorf("destroy kernel %s: %w", id, err)
		}
		if r.kernels.Fail(k, fmt.Errorf("kernel %s: destroyed while queued in SLURM", id)) {
			_ = os.RemoveAll(j.dir)
			return nil
		}
		// SLURM ran it meanwhile: stop it as a running kernel.
	}
	err := r.kernels.Destroy(ctx, k, func(ctx context.Context, k *kernel) error { return r.stop(ctx, k, j.id, grace) })
	if err == nil && r.kernels.Get(id) == nil {
		_ = os.RemoveAll(j.dir)
	}
	return err
}

// stop signals a started kernel's job and waits for the poller to see it
// end.
func (r *Runtime) stop(ctx context.Context, k *kernel, jobID string, grace time.Duration) error {
	running, first := r.kernels.Destroying(k)
	if !running {
		return nil
	}
	if first && grace > 0 {
		// --full: the batch shell and its children, not only job steps.
		if _, err := run(ctx, r.cmds.Scancel, "--full", "--signal=TERM", jobID); err != nil {
			r.log.Warn("slurm runtime: polite scancel failed; forcing", "kernel", k.ID, "job", jobID, "err", err)
			grace = 0
		}
	}
	if grace > 0 && k.WaitExit(ctx, grace) {
		return nil
	}
	// Detached: a cancelled ctx means force now, and the force must go out.
	kill := context.WithoutCancel(ctx)
	if _, err := run(kill, r.cmds.Scancel, "--full", "--signal=KILL", jobID); err != nil {
		r.log.Warn("slurm runtime: scancel --signal=KILL failed", "kernel", k.ID, "job", jobID, "err", err)
	}
	if _, err := run(kill, r.cmds.Scancel, jobID); err != nil {
		r.log.Warn("slurm runtime: scancel failed", "kernel", k.ID, "job", jobID, "err", err)
	}
	select {
	case <-k.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Live lists started kernels, running or exited; queued ones are left out
// (see Queued).
func (r *Runtime) Live() []runtime.KernelState { return r.kernels.Live() }

// QueuedKernel is a kernel whose job SLURM has not run yet.
type QueuedKernel struct {
	ID  domain.KernelID
	Job string
	// Note is "queued in SLURM: <reason>", with squeue's reason.
	Note string
}

// Queued lists the kernels submitted but not yet running, sorted by id.
func (r *Runtime) Queued() []QueuedKernel {
	var out []QueuedKernel
	for _, t := range r.tracked() {
		if r.kernels.Creating(t.k) {
			r.mu.Lock()
			out = append(out, QueuedKernel{ID: t.k.ID, Job: t.job, Note: t.k.Own.note})
			r.mu.Unlock()
		}
	}
	slices.SortFunc(out, func(a, b QueuedKernel) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

var _ runtime.WaitReporter = (*Runtime)(nil)

// Waiting is Queued in the agent's terms.
func (r *Runtime) Waiting() []runtime.Waiting {
	q := r.Queued()
	out := make([]runtime.Waiting, len(q))
	for i, k := range q {
		out[i] = runtime.Waiting{ID: k.ID, Note: k.Note}
	}
	return out
}

// Images lists the images Pull has accepted.
func (r *Runtime) Images() []string { return r.images.List() }

// Logs opens the job's output file.
func (r *Runtime) Logs(id domain.KernelID) (io.ReadCloser, error) {
	if r.kernels.Get(id) == nil {
		return nil, fmt.Errorf("logs of %s: %w", id, runtime.ErrNotFound)
	}
	return runtime.OpenLog(r.kernelDir(id), id)
}

// Close cancels every kernel's job with CloseGrace, stops the poller and
// delivers the remaining events.
func (r *Runtime) Close(ctx context.Context) error {
	return runtime.Shutdown[*job]{Images: r.images, Kernels: r.kernels, Destroy: r.Destroy, Grace: r.cfg.CloseGrace,
		Stop: func() error {
			r.stopLoop()
			<-r.loopDone
			return nil
		},
		Out: r.out}.Run(ctx)
}

var _ runtime.CapacityReporter = (*Runtime)(nil)

// Capacity is what the partition's nodes offer now, read afresh so nodes
// drained or added since the agent started are seen at the next heartbeat.
func (r *Runtime) Capacity(ctx context.Context) (map[string]string, error) {
	return Capacity(ctx, r.cmds, r.cfg.Partition)
}
