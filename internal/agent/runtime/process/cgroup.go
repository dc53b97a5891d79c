package process

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LimitStatus says whether the runtime can enforce one kind of limit.
type LimitStatus struct {
	// Limit is the slot it enforces: "mem", "cpu" or "pids".
	Limit    string
	Enforced bool
	// Detail says where the limit is enforced ("cgroup v1 at /sys/…") or
	// why it cannot be.
	Detail string
}

// limits are one kernel's resource caps; zero means none.
type limits struct {
	memBytes int64
	cpuMilli int64 // thousandths of a core
	pids     int64
}

// controllers maps each limit to the cgroup controller that enforces it, in
// the order Enforcement reports them.
var controllers = []struct{ limit, ctl string }{
	{"mem", "memory"},
	{"cpu", "cpu"},
	{"pids", "pids"},
}

// cfsPeriod is the CFS period written with every CPU quota, in µs: the
// kernel's default, so a quota reads as "this much CPU time per 100 ms".
const cfsPeriod = 100000

// minCFSQuota is the smallest quota the kernel accepts (1 ms).
const minCFSQuota = 1000

// fileValue is one control file write. Optional writes are skipped when the
// file does not exist (swap accounting is often compiled out or disabled).
type fileValue struct {
	file     string
	value    string
	optional bool
}

// limitFiles is what enforcing l for one controller means in cgroup v1 or
// v2, in the order the files must be written.
func limitFiles(ctl string, v2 bool, l limits) []fileValue {
	switch ctl {
	case "memory":
		if l.memBytes <= 0 {
			return nil
		}
		n := strconv.FormatInt(l.memBytes, 10)
		if v2 {
			return []fileValue{{"memory.max", n, false}, {"memory.swap.max", "0", true}}
		}
		// memsw caps memory plus swap; equal to the memory cap it forbids
		// swapping, so the limit means what it says. It must be written
		// second: the kernel refuses memsw below limit_in_bytes.
		return []fileValue{{"memory.limit_in_bytes", n, false}, {"memory.memsw.limit_in_bytes", n, true}}
	case "cpu":
		if l.cpuMilli <= 0 {
			return nil
		}
		quota := max(l.cpuMilli*cfsPeriod/1000, minCFSQuota)
		if v2 {
			return []fileValue{{"cpu.max", fmt.Sprintf("%d %d", quota, cfsPeriod), false}}
		}
		return []fileValue{
			{"cpu.cfs_period_us", strconv.Itoa(cfsPeriod), false},
			{"cpu.cfs_quota_us", strconv.FormatInt(quota, 10), false},
		}
	case "pids":
		if l.pids <= 0 {
			return nil
		}
		return []fileValue{{"pids.max", strconv.FormatInt(l.pids, 10), false}}
	}
	return nil
}

// probeFile is a file that must exist in a parent cgroup for its controller
// to be usable there.
func probeFile(ctl string, v2 bool) string {
	switch {
	case ctl == "memory" && v2:
		return "memory.max"
	case ctl == "memory":
		return "memory.limit_in_bytes"
	case ctl == "cpu" && v2:
		return "cpu.max"
	case ctl == "cpu":
		return "cpu.cfs_quota_us"
	}
	return "pids.max"
}

// mount is one line of /proc/self/mountinfo, for cgroup file systems.
type mount struct {
	root, point, fstype string
	opts                []string // super options: the controllers, for v1
}

// parseMountinfo reads the cgroup and cgroup2 mounts from mountinfo(5).
func parseMountinfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// "36 35 98:0 /root /point opts [optional...] - fstype source superopts"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || g[0] != "cgroup" && g[0] != "cgroup2" {
			continue
		}
		out = append(out, mount{
			root:   unescapeMount(f[3]),
			point:  unescapeMount(f[4]),
			fstype: g[0],
			opts:   strings.Split(g[2], ","),
		})
	}
	return out, sc.Err()
}

// unescapeMount undoes the octal escapes (\040 for space) mountinfo uses.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroup reads cgroups(7)'s /proc/PID/cgroup: controller name →
// the process's path in that hierarchy; the v2 hierarchy is under "".
func parseProcCgroup(r io.Reader) (map[string]string, error) {
	out := make(map[string]string)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, sc.Err()
}

// ownDir finds where, in the mounted file systems, this process's cgroup
// for ctl lives; ctl "" asks for the v2 hierarchy.
func ownDir(mounts []mount, own map[string]string, ctl string) (string, error) {
	path, ok := own[ctl]
	if !ok {
		if ctl == "" {
			return "", errors.New("this process is in no cgroup v2 hierarchy")
		}
		return "", fmt.Errorf("this process is in no %s cgroup", ctl)
	}
	for _, m := range mounts {
		if ctl == "" && m.fstype != "cgroup2" || ctl != "" && (m.fstype != "cgroup" || !slices.Contains(m.opts, ctl)) {
			continue
		}
		rel, ok := strings.CutPrefix(path, m.root)
		if m.root == "/" {
			rel, ok = path, true
		}
		if !ok || rel != "" && rel[0] != '/' {
			continue // this mount shows another part of the hierarchy
		}
		return filepath.Join(m.point, rel), nil
	}
	if ctl == "" {
		return "", errors.New("no cgroup2 file system is mounted")
	}
	return "", fmt.Errorf("no cgroup v1 hierarchy with the %s controller is mounted", ctl)
}

// hierarchy is where one controller's kernel cgroups go.
type hierarchy struct {
	v2     bool
	parent string // holds one directory per kernel
}

// cgroups is the runtime's view of the machine's cgroups, fixed at New.
type cgroups struct {
	log    *slog.Logger
	byCtl  map[string]hierarchy // only usable controllers
	status []LimitStatus
	// mounts are the cgroup file systems, to find where a thread's cgroup
	// paths lie.
	mounts []mount
}

// setupCgroups finds, for each controller, a hierarchy where this process
// may create cgroups, creates the runtime's parent directory there (under
// the process's own cgroup, so kernels stay inside whatever limits the
// agent itself runs under) and removes what an earlier run left in it.
func setupCgroups(log *slog.Logger, name string) *cgroups {
	cg := &cgroups{log: log, byCtl: make(map[string]hierarchy)}
	mounts, own, err := readSelfCgroups()
	cg.mounts = mounts
	for _, c := range controllers {
		if err != nil {
			cg.status = append(cg.status, LimitStatus{Limit: c.limit, Detail: err.Error()})
			continue
		}
		h, err := setupController(mounts, own, c.ctl, name)
		if err != nil {
			cg.status = append(cg.status, LimitStatus{Limit: c.limit, Detail: err.Error()})
			continue
		}
		cg.byCtl[c.ctl] = h
		v := "v1"
		if h.v2 {
			v = "v2"
		}
		cg.status = append(cg.status, LimitStatus{Limit: c.limit, Enforced: true, Detail: fmt.Sprintf("cgroup %s at %s", v, h.parent)})
	}
	for _, p := range cg.parents() {
		entries, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				stale := filepath.Join(p, e.Name())
				log.Warn("removing a kernel cgroup left by an earlier run", "cgroup", stale)
				cg.removeDir(stale, 0)
			}
		}
	}
	return cg
}

func readSelfCgroups() ([]mount, map[string]string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, fmt.Errorf("read mounts: %w", err)
	}
	mounts, err := parseMountinfo(bytes.NewReader(mi))
	if err != nil {
		return nil, nil, fmt.Errorf("read mounts: %w", err)
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, nil, fmt.Errorf("read own cgroups: %w", err)
	}
	own, err := parseProcCgroup(bytes.NewReader(pc))
	if err != nil {
		return nil, nil, fmt.Errorf("read own cgroups: %w", err)
	}
	return mounts, own, nil
}

// setupController prefers a v1 hierarchy that carries ctl, then v2 when the
// unified hierarchy offers ctl.
func setupController(mounts []mount, own map[string]string, ctl, name string) (hierarchy, error) {
	dir, v1err := ownDir(mounts, own, ctl)
	if v1err == nil {
		parent := filepath.Join(dir, name)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return hierarchy{}, fmt.Errorf("cgroup v1 %s: %w", ctl, err)
		}
		if err := writable(filepath.Join(parent, probeFile(ctl, false))); err != nil {
			return hierarchy{}, fmt.Errorf("cgroup v1 %s: %w", ctl, err)
		}
		return hierarchy{parent: parent}, nil
	}
	dir, err := ownDir(mounts, own, "")
	if err != nil {
		return hierarchy{}, fmt.Errorf("%w; %w", v1err, err)
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return hierarchy{}, fmt.Errorf("%w; cgroup v2: %w", v1err, err)
	}
	if !slices.Contains(strings.Fields(string(avail)), ctl) {
		return hierarchy{}, fmt.Errorf("%w; cgroup v2 at %s does not offer the %s controller", v1err, dir, ctl)
	}
	// v2 hands a controller to children only through subtree_control, and
	// refuses that in a cgroup that holds processes (other than the root):
	// the agent must then run in a cgroup of its own whose parent delegates.
	parent := filepath.Join(dir, name)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+ctl), 0); err != nil {
		return hierarchy{}, fmt.Errorf("cgroup v2: enable %s below %s: %w", ctl, dir, err)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return hierarchy{}, fmt.Errorf("cgroup v2: %w", err)
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+ctl), 0); err != nil {
		return hierarchy{}, fmt.Errorf("cgroup v2: enable %s below %s: %w", ctl, parent, err)
	}
	if err := writable(filepath.Join(parent, probeFile(ctl, true))); err != nil {
		return hierarchy{}, fmt.Errorf("cgroup v2 %s: %w", ctl, err)
	}
	if err := probeCloneIntoCgroup(parent); err != nil {
		return hierarchy{}, fmt.Errorf("cgroup v2 %s: %w", ctl, err)
	}
	return hierarchy{v2: true, parent: parent}, nil
}

func writable(path string) error {
	if err := unix.Access(path, unix.W_OK); err != nil {
		return &os.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}

// enforcement reports each limit; with cg nil, why nothing is enforced.
func (cg *cgroups) enforcement() []LimitStatus { return slices.Clone(cg.status) }

// parents lists the distinct parent directories; several controllers share
// one in v2, or in a v1 hierarchy mounted with more than one controller.
func (cg *cgroups) parents() []string {
	var out []string
	for _, c := range controllers {
		if h, ok := cg.byCtl[c.ctl]; ok && !slices.Contains(out, h.parent) {
			out = append(out, h.parent)
		}
	}
	return out
}

// kernelCgroup is one kernel's cgroup, one directory per hierarchy.
type kernelCgroup struct {
	cg     *cgroups
	dirs   []string
	memDir string // where OOM kills are counted; empty without memory
	memV2  bool

	// v1 are the directories of dirs in cgroup v1 hierarchies, which the
	// forking thread joins, and v1Ctl a controller of each, to find where
	// the thread was in that hierarchy. v2 is the one in the v2 hierarchy,
	// which the process is cloned into; empty without.
	v1    []string
	v1Ctl []string
	v2    string
	// pidsDir is set while the v1 pids cap is pids+1, the one more being
	// the forking thread's; settle writes pids there once it has forked.
	pidsDir string
	pids    int64
}

// create makes the kernel's cgroup directories and writes its limits. A
// directory of the same name (a kernel id reused after a crash) is emptied
// and replaced first.
func (cg *cgroups) create(id string, l limits) (*kernelCgroup, error) {
	kc := &kernelCgroup{cg: cg}
	for _, p := range cg.parents() {
		dir := filepath.Join(p, id)
		if _, err := os.Stat(dir); err == nil {
			cg.removeDir(dir, 0)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			kc.remove()
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		kc.dirs = append(kc.dirs, dir)
	}
	for _, c := range controllers {
		h, ok := cg.byCtl[c.ctl]
		if !ok {
			continue
		}
		dir := filepath.Join(h.parent, id)
		switch {
		case h.v2:
			kc.v2 = dir
		case !slices.Contains(kc.v1, dir):
			kc.v1 = append(kc.v1, dir)
			kc.v1Ctl = append(kc.v1Ctl, c.ctl)
		}
		if c.ctl == "memory" {
			kc.memDir, kc.memV2 = dir, h.v2
		}
		cl := l
		if c.ctl == "pids" && !h.v2 && l.pids > 0 {
			// The thread that forks the kernel counts while it is in the
			// cgroup; with the cap one higher until it has left, the
			// kernel's own processes never number more than l.pids, and
			// a cap of 1 still lets the one process start.
			cl.pids = l.pids + 1
			kc.pidsDir, kc.pids = dir, l.pids
		}
		for _, fv := range limitFiles(c.ctl, h.v2, cl) {
			path := filepath.Join(dir, fv.file)
			if fv.optional {
				if _, err := os.Stat(path); err != nil {
					continue
				}
			}
			if err := os.WriteFile(path, []byte(fv.value), 0); err != nil {
				kc.remove()
				return nil, fmt.Errorf("set %s limit: %w", c.limit, err)
			}
		}
	}
	return kc, nil
}

// settle sets the v1 pids cap to the kernel's own once the forking thread
// is done (see create); the thread still counts, so until it leaves the
// kernel has one process less than its cap.
func (kc *kernelCgroup) settle() error {
	if kc.pidsDir == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(kc.pidsDir, "pids.max"), []byte(strconv.FormatInt(kc.pids, 10)), 0); err != nil {
		return fmt.Errorf("set pids limit: %w", err)
	}
	return nil
}

// oomKilled reports whether the kernel's OOM killer ended any process of the
// kernel. Both versions keep an oom_kill counter (v1 since Linux 4.13).
func (kc *kernelCgroup) oomKilled() bool {
	if kc.memDir == "" {
		return false
	}
	file := "memory.oom_control"
	if kc.memV2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(kc.memDir, file))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
			return err == nil && v > 0
		}
	}
	return false
}

// killAll SIGKILLs every process in the kernel's cgroups but leader, which
// the caller has not reaped yet and which v1 may still list.
func (kc *kernelCgroup) killAll(leader int) {
	for _, dir := range kc.dirs {
		kc.cg.killDir(dir, leader)
	}
}

// remove kills what is left and deletes the kernel's directories.
func (kc *kernelCgroup) remove() {
	for _, dir := range kc.dirs {
		kc.cg.removeDir(dir, 0)
	}
}

// cleanupWait bounds how long killing and removing one cgroup may take; a
// process stuck in uninterruptible sleep is left behind, and logged, rather
// than hanging the agent.
const cleanupWait = 5 * time.Second

// cleanupPoll is how often a cgroup is re-read while its processes die.
const cleanupPoll = 10 * time.Millisecond

// killDir SIGKILLs the processes in dir, except skip, until none is left.
// It never signals the agent itself: v1 lists a process in cgroup.procs
// while any one of its threads is in the cgroup, and a thread that forked
// a kernel from inside its cgroup may be stuck there (see forkInside).
func (cg *cgroups) killDir(dir string, skip int) {
	deadline := time.Now().Add(cleanupWait)
	self := os.Getpid()
	for {
		pids, err := readPids(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return
		}
		pids = slices.DeleteFunc(pids, func(p int) bool { return p == skip || p == self })
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			cg.log.Warn("kernel cgroup processes survive SIGKILL", "cgroup", dir, "pids", pids)
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(cleanupPoll)
	}
}

// removeDir empties dir of processes and removes it; rmdir can fail with
// EBUSY for a moment after the last process died.
func (cg *cgroups) removeDir(dir string, skip int) {
	cg.killDir(dir, skip)
	deadline := time.Now().Add(cleanupWait)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			cg.log.Warn("cannot remove kernel cgroup", "cgroup", dir, "err", err)
			return
		}
		time.Sleep(cleanupPoll)
	}
}

// close removes the runtime's parent directories, which only works once
// every kernel cgroup under them is gone.
func (cg *cgroups) close() {
	for _, p := range cg.parents() {
		if err := syscall.Rmdir(p); err != nil && !errors.Is(err, syscall.ENOENT) {
			cg.log.Warn("cannot remove the runtime's cgroup", "cgroup", p, "err", err)
		}
	}
}

func readPids(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}
