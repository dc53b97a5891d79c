package slurm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

func (r *Runtime) loop(ctx context.Context) {
	defer close(r.loopDone)
	t := time.NewTicker(r.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.poll(ctx)
	}
}

// tracked is a kernel whose job the poller watches.
type tracked struct {
	k   *kernel
	job string
	dir string
}

// tracked lists the kernels with a submitted job that has not ended.
func (r *Runtime) tracked() []tracked {
	var out []tracked
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.kernelsAll() {
		j := st.Own
		if j == nil || j.id == "" {
			continue
		}
		select {
		case <-st.Done():
			continue
		default:
		}
		out = append(out, tracked{k: st, job: j.id, dir: j.dir})
	}
	return out
}

// kernelsAll returns every kernel of this runtime still in the table, in
// any phase, pruning ids the table has dropped. The Table lists only
// started kernels, so the runtime keeps the ids it claimed or held itself.
// r.mu must be held.
func (r *Runtime) kernelsAll() []*kernel {
	var out []*kernel
	for id := range r.ids {
		if k := r.kernels.Get(id); k != nil {
			out = append(out, k)
		} else {
			delete(r.ids, id)
		}
	}
	return out
}

// poll asks squeue once for every job of this user and moves each tracked
// kernel by States. One call per interval, whatever the number of jobs.
func (r *Runtime) poll(ctx context.Context) {
	ts := r.tracked()
	if len(ts) == 0 {
		return
	}
	out, err := run(ctx, r.cmds.Squeue, "-h", "--me", "--states=all", "-O", squeueFormat)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("slurm runtime: squeue failed; reading status files only", "err", err)
		for _, t := range ts {
			if code, ok := readStatus(t.dir, t.k.ID); ok {
				r.end(t, code, true, Rule("").Message, fmt.Sprintf("exited with code %d (from its status file; squeue failed)", code))
			}
		}
		return
	}
	rows := parseSqueue(out)
	for _, t := range ts {
		if row, ok := rows[t.job]; ok {
			r.apply(t, row.State, row.Reason, row.Code)
			continue
		}
		r.missing(ctx, t)
	}
}

// apply moves t's kernel by the rule for its job's state.
func (r *Runtime) apply(t tracked, stateName, reason string, slurmCode int) {
	rule := Rule(stateName)
	switch rule.Phase {
	case Queued:
		note := "queued in SLURM: " + reason
		switch rule.State {
		case "SUSPENDED":
			note = "suspended in SLURM"
		case "STOPPED":
			note = "stopped in SLURM (SIGSTOP)"
		}
		r.mu.Lock()
		changed := t.k.Own.note != note
		t.k.Own.note, t.k.Own.missingSince = note, time.Time{}
		r.mu.Unlock()
		if changed {
			r.log.Info("slurm runtime: job waits", "kernel", t.k.ID, "job", t.job, "note", note)
		}
	case Running:
		r.mu.Lock()
		t.k.Own.note, t.k.Own.missingSince = "", time.Time{}
		r.mu.Unlock()
		r.start(t)
	default:
		code, fromFile := readStatus(t.dir, t.k.ID)
		if !fromFile {
			code = slurmCode
			r.writeStatus(t.dir, t.k.ID, code)
		}
		msg := rule.Message
		if msg == "" {
			msg = fmt.Sprintf("exited with code %d", code)
		} else {
			msg = fmt.Sprintf("%s (exit code %d)", msg, code)
		}
		// A status file means the script ran the kernel.
		r.end(t, code, fromFile, rule.State, msg)
	}
}

// start reports the kernel started, once, and keeps the start in the
// state file for Recover.
func (r *Runtime) start(t tracked) {
	at := r.now()
	if !r.kernels.Start(t.k, at) {
		return
	}
	if st, err := readState(t.dir); err == nil {
		st.StartedAt = at
		if err := writeState(t.dir, st); err != nil {
			r.log.Warn("slurm runtime: cannot record a start", "kernel", t.k.ID, "err", err)
		}
	}
	r.log.Info("slurm runtime: job running", "kernel", t.k.ID, "job", t.job)
}

// end records the kernel's exit. A kernel that never started is listed as
// exited without a start when its job never ran (cancelled or failed while
// queued), so the manager still learns the outcome; such a job's code is 1
// when SLURM says 0, since nothing ran to succeed.
func (r *Runtime) end(t tracked, code int, ran bool, state, msg string) {
	if r.kernels.Creating(t.k) {
		if ran {
			r.start(t)
		} else {
			if code == 0 {
				code = 1
			}
			now := r.now()
			c := code
			ev, ok := r.kernels.Adopt(t.k, runtime.KernelState{Session: t.k.Session, Image: t.k.Image, ExitCode: &c,
				Reason: domain.ReasonExited, Message: fmt.Sprintf("SLURM job %s ended before it ran: %s", t.job, msg),
				StartedAt: now, FinishedAt: now})
			if ok {
				r.out.Emit(ev)
			}
			return
		}
	}
	reason := domain.ReasonExited
	if state == "OUT_OF_MEMORY" {
		reason = domain.ReasonOOMKilled
	}
	r.kernels.Exited(t.k, func(destroying bool) runtime.Exit {
		if destroying {
			return runtime.Exit{Code: code, Reason: domain.ReasonDestroyed, Message: "destroyed (scancel)"}
		}
		if code == 0 && Rule(state).Failure {
			// The manager counts code 0 as success; SLURM cut the kernel
			// short, so the code says failure and the message why.
			return runtime.Exit{Code: 1, Reason: reason, Message: msg + "; reported as code 1: SLURM ended the job"}
		}
		return runtime.Exit{Code: code, Reason: reason, Message: msg}
	})
}

// missing handles a job squeue no longer lists: ended and purged after
// MinJobAge, or lost. The status file answers first, then scontrol; a job
// neither knows ends its kernel as lost after LostGrace.
func (r *Runtime) missing(ctx context.Context, t tracked) {
	if code, ok := readStatus(t.dir, t.k.ID); ok {
		r.end(t, code, true, "", fmt.Sprintf("exited with code %d", code))
		return
	}
	if out, err := run(ctx, r.cmds.Scontrol, "show", "job", "-o", t.job); err == nil {
		if j, err := parseScontrolJob(out); err == nil {
			r.apply(t, j.State, j.Reason, j.Code)
			return
		}
	}
	r.mu.Lock()
	since := t.k.Own.missingSince
	if since.IsZero() {
		t.k.Own.missingSince = r.now()
	}
	r.mu.Unlock()
	if since.IsZero() {
		r.log.Warn("slurm runtime: job unknown to SLURM", "kernel", t.k.ID, "job", t.job)
		return
	}
	if r.now().Sub(since) < r.cfg.LostGrace {
		return
	}
	msg := fmt.Sprintf("SLURM job %s is lost: unknown to squeue and scontrol for %v and no status file", t.job, r.cfg.LostGrace)
	r.writeStatus(t.dir, t.k.ID, lostCode)
	if r.kernels.Creating(t.k) {
		r.end(t, lostCode, false, "", msg)
		return
	}
	r.end(t, lostCode, true, "", msg)
}

// Recover adopts the jobs an earlier run of this agent left, from the
// state files in WorkDir: a running job is listed running again (its start
// was reported by the run that saw it), an ended one is listed with its
// exit code, which is reported again (the manager applies repeats
// idempotently), and a queued one waits in creation as before. A state
// file without a job id (the agent died around sbatch) is looked up by the
// job's name. Kernels already known are left alone.
func (r *Runtime) Recover(ctx context.Context) error {
	if r.kernels.Closed() {
		return runtime.ErrClosed
	}
	entries, err := os.ReadDir(r.cfg.WorkDir)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	out, qerr := run(ctx, r.cmds.Squeue, "-h", "--me", "--states=all", "-O", squeueFormat)
	rows := parseSqueue(out)
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(r.cfg.WorkDir, e.Name())
		st, err := readState(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || runtime.ValidKernelID(st.Kernel) != nil || string(st.Kernel) != e.Name() {
			r.log.Warn("slurm runtime: unreadable state file; left alone", "dir", dir, "err", err)
			continue
		}
		if st.JobID == "" {
			st.JobID = r.findByName(rows, st.Name)
			if st.JobID == "" {
				if qerr == nil {
					_ = os.RemoveAll(dir) // never submitted: the manager's create is retried
				}
				continue
			}
			if err := writeState(dir, st); err != nil {
				errs = append(errs, fmt.Errorf("recover kernel %s: %w", st.Kernel, err))
			}
		}
		r.adopt(st, dir, rows, qerr == nil)
	}
	if qerr != nil {
		r.log.Warn("slurm runtime: squeue failed during recover; kernels that had started are listed running", "err", qerr)
	}
	return errors.Join(errs...)
}

func (r *Runtime) findByName(rows map[string]jobRow, name string) string {
	for id, row := range rows {
		if row.Name == name {
			return id
		}
	}
	return ""
}

func (r *Runtime) adopt(st state, dir string, rows map[string]jobRow, listed bool) {
	r.mu.Lock()
	k, fresh := r.kernels.Hold(st.Kernel, st.Session)
	if !fresh {
		r.mu.Unlock()
		return
	}
	submitted := make(chan struct{})
	close(submitted)
	r.ids[st.Kernel] = struct{}{}
	k.Own = &job{dir: dir, submitted: submitted, id: st.JobID, note: "queued in SLURM: recovered"}
	k.Image = st.Image
	r.mu.Unlock()
	r.images.Add(st.Image)
	t := tracked{k: k, job: st.JobID, dir: dir}
	row, ok := rows[st.JobID]
	started := st.StartedAt
	if started.IsZero() {
		started = r.now()
	}
	running := runtime.KernelState{Session: st.Session, Image: st.Image, Running: true, StartedAt: started}
	switch {
	case ok && Rule(row.State).Phase == Running,
		ok && Rule(row.State).Phase == Queued && !st.StartedAt.IsZero(), // suspended after it ran
		!listed && !st.StartedAt.IsZero():                               // squeue is down: what had started is taken to run
		r.kernels.Adopt(k, running)
	case ok && Rule(row.State).Phase == Ended:
		if !st.StartedAt.IsZero() {
			r.kernels.Adopt(k, running)
		}
		r.apply(t, row.State, row.Reason, row.Code)
	case !ok && !st.StartedAt.IsZero():
		// Purged after MinJobAge: the poller's missing path decides.
		r.kernels.Adopt(k, running)
	}
	r.log.Info("slurm runtime: recovered a job", "kernel", st.Kernel, "job", st.JobID)
}
