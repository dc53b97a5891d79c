package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// gpu is one row of nvidia-smi --query-gpu.
type gpu struct {
	Index  int
	UUID   string
	Name   string
	MemMiB int64
}

// machineGPUs asks nvidia-smi for the machine's GPUs: the truth the
// agent's NVML discovery is held to.
func machineGPUs() (string, []gpu, error) {
	smi, err := lookSMI()
	if err != nil {
		return "", nil, err
	}
	out, err := exec.Command(smi, "--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return "", nil, fmt.Errorf("nvidia-smi: %w", err)
	}
	var gpus []gpu
	for _, l := range nonEmptyLines(string(out)) {
		f := strings.Split(l, ",")
		if len(f) != 4 {
			return "", nil, fmt.Errorf("nvidia-smi printed %q", l)
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		idx, err1 := strconv.Atoi(f[0])
		mem, err2 := strconv.ParseInt(f[3], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return "", nil, fmt.Errorf("nvidia-smi printed %q: %w", l, err)
		}
		gpus = append(gpus, gpu{Index: idx, UUID: f[1], Name: f[2], MemMiB: mem})
	}
	if len(gpus) == 0 {
		return "", nil, errors.New("nvidia-smi lists no GPU")
	}
	return smi, gpus, nil
}

// checker holds the cluster under test and the tally.
type checker struct {
	sokovan, self, smi, dir string
	libcuda                 []string
	hold                    time.Duration
	gpus                    []gpu

	url, token string
	agentToken string
	procs      []*proc
	agents     map[string]*proc

	total, failed int
}

// proc is a sokovan process the checker started.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (c *checker) describe() {
	out, _ := exec.Command(c.smi, "--query-gpu=driver_version", "--format=csv,noheader").Output()
	host, _ := os.Hostname()
	fmt.Printf("gpu-check: host %s, driver %s, %d GPU(s):\n", host, strings.TrimSpace(firstLine(string(out))), len(c.gpus))
	for _, g := range c.gpus {
		fmt.Printf("gpu-check:   %d %s %s %d MiB\n", g.Index, g.UUID, g.Name, g.MemMiB)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// result prints one check's line and counts it.
func (c *checker) result(name string, err error, detail string) bool {
	c.total++
	if err != nil {
		c.failed++
		fmt.Printf("FAIL %s: %v\n", name, err)
		return false
	}
	fmt.Printf("ok   %s: %s\n", name, detail)
	return true
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (c *checker) start(name string, args []string, env ...string) (*proc, error) {
	log := filepath.Join(c.dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.sokovan, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	c.procs = append(c.procs, p)
	return p, nil
}

// stop ends p as an operator would, with SIGTERM, and kills it if that
// takes too long.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (c *checker) stopAll() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop()
	}
}

// dumpLogs prints the tail of each process's log, for a failed run.
func (c *checker) dumpLogs() {
	for _, p := range c.procs {
		b, _ := os.ReadFile(p.log)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		fmt.Printf("---- %s log (tail) ----\n%s\n", p.name, b)
	}
}

func (c *checker) startManager(ctx context.Context) error {
	addr, err := freePort()
	if err != nil {
		return err
	}
	c.url = "http://" + addr
	c.token = "gpucheck-admin-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c.agentToken = "gpucheck-agent-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c.agents = map[string]*proc{}
	if _, err := c.start("manager", []string{"server", "--db", filepath.Join(c.dir, "sokovan.db"), "--listen", addr,
		"--agent-token", c.agentToken, "--insecure-shared-agent-token", "--cycle-interval", "250ms"}, "SOKOVAN_ADMIN_TOKEN="+c.token); err != nil {
		return err
	}
	return poll(ctx, 30*time.Second, func() (bool, error) {
		var l struct{ Items []v1.Agent }
		_, err := c.api(ctx, "GET", "/v1/agents", nil, &l)
		return err == nil, nil
	})
}

// startAgent runs an agent with the given --devices and waits until it is
// ALIVE with its devices listed.
func (c *checker) startAgent(ctx context.Context, id, devices string) (v1.Agent, error) {
	addr, err := freePort()
	if err != nil {
		return v1.Agent{}, err
	}
	p, err := c.start("agent-"+id, []string{"agent", "run", "--id", id, "--manager", c.url, "--token", c.agentToken,
		"--listen", addr, "--data-dir", filepath.Join(c.dir, id), "--devices", devices, "--allow-command",
		"--heartbeat", "1s"})
	if err != nil {
		return v1.Agent{}, err
	}
	c.agents[id] = p
	var a v1.Agent
	err = poll(ctx, 60*time.Second, func() (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("agent %s exited: %s", id, p.cmd.ProcessState)
		default:
		}
		code, err := c.api(ctx, "GET", "/v1/agents/"+id, nil, &a)
		if code == http.StatusNotFound {
			return false, nil
		}
		return err == nil && a.Status == "ALIVE" && len(a.Devices) > 0, nil
	})
	return a, err
}

// api makes one call with the admin token; a non-2xx answer is an error
// carrying the body.
func (c *checker) api(ctx context.Context, method, path string, body, into any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if into == nil {
		return resp.StatusCode, nil
	}
	if bs, ok := into.(*[]byte); ok {
		*bs = b
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.Unmarshal(b, into)
}

// poll calls f every 100 ms until it says done, returns an error, or
// limit passes.
func poll(ctx context.Context, limit time.Duration, f func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		done, err := f()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// submit creates a batch session on agent whose kernel runs the probe.
func (c *checker) submit(ctx context.Context, name, agent string, slots map[string]string, hold time.Duration) (string, error) {
	res := map[string]string{"cpu": "1", "mem": "256m"}
	for k, v := range slots {
		res[k] = v
	}
	req := v1.CreateSessionRequest{
		Name: name, Type: "batch", Image: "sleep", Resources: res,
		DesignatedAgents: []string{agent},
		Command: []string{c.self, "probe", "--hold", hold.String(), "--smi", c.smi,
			"--libcuda", strings.Join(c.libcuda, ",")},
	}
	var s v1.Session
	if _, err := c.api(ctx, "POST", "/v1/sessions", req, &s); err != nil {
		return "", err
	}
	return s.ID, nil
}

func (c *checker) session(ctx context.Context, id string) (v1.Session, error) {
	var s v1.Session
	_, err := c.api(ctx, "GET", "/v1/sessions/"+id, nil, &s)
	return s, err
}

func ended(status string) bool {
	return status == "TERMINATED" || status == "CANCELLED" || status == "ERROR"
}

// report waits for the probe's line in the session's log.
func (c *checker) report(ctx context.Context, id string) (report, v1.Session, error) {
	var r report
	var s v1.Session
	err := poll(ctx, 90*time.Second, func() (bool, error) {
		var err error
		if s, err = c.session(ctx, id); err != nil {
			return false, err
		}
		var log []byte
		if _, err := c.api(ctx, "GET", "/v1/sessions/"+id+"/logs", nil, &log); err == nil {
			for _, l := range nonEmptyLines(string(log)) {
				if j, ok := strings.CutPrefix(l, reportPrefix); ok {
					return true, json.Unmarshal([]byte(j), &r)
				}
			}
		}
		if ended(s.Status) {
			return false, fmt.Errorf("session ended %s (%s) before its probe reported; log: %q", s.Status, s.StatusReason, log)
		}
		return false, nil
	})
	return r, s, err
}

// waitEnded waits for the session to end and says how.
func (c *checker) waitEnded(ctx context.Context, id string) (v1.Session, error) {
	var s v1.Session
	err := poll(ctx, 90*time.Second, func() (bool, error) {
		var err error
		s, err = c.session(ctx, id)
		return err == nil && ended(s.Status), err
	})
	return s, err
}

// grant is the single device a one-kernel session was granted.
func grant(s v1.Session) (v1.DeviceGrant, error) {
	if len(s.Kernels) != 1 || len(s.Kernels[0].Devices) != 1 {
		return v1.DeviceGrant{}, fmt.Errorf("want one kernel with one device grant, have %+v", s.Kernels)
	}
	return s.Kernels[0].Devices[0], nil
}

// computeApps lists nvidia-smi's compute processes as pid → GPU UUID and
// MiB used.
type app struct {
	UUID string
	MiB  int64
}

func (c *checker) computeApps() (map[int]app, error) {
	out, err := exec.Command(c.smi, "--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi --query-compute-apps: %w", err)
	}
	apps := map[int]app{}
	for _, l := range nonEmptyLines(string(out)) {
		f := strings.Split(l, ",")
		if len(f) != 3 {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil {
			continue
		}
		mib, _ := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		apps[pid] = app{UUID: strings.TrimSpace(f[1]), MiB: mib}
	}
	return apps, nil
}

// agentDevice reads one device of an agent from the manager.
func (c *checker) agentDevice(ctx context.Context, agent, id string) (v1.Device, error) {
	var a v1.Agent
	if _, err := c.api(ctx, "GET", "/v1/agents/"+agent, nil, &a); err != nil {
		return v1.Device{}, err
	}
	for _, d := range a.Devices {
		if d.ID == id {
			return d, nil
		}
	}
	return v1.Device{}, fmt.Errorf("agent %s lists no device %s", agent, id)
}

// waitFree waits until the manager says the device is wholly free again.
func (c *checker) waitFree(ctx context.Context, agent, id string) error {
	var d v1.Device
	err := poll(ctx, 30*time.Second, func() (bool, error) {
		var err error
		d, err = c.agentDevice(ctx, agent, id)
		return err == nil && d.Free == "1" && len(d.Holders) == 0, err
	})
	if err != nil {
		return fmt.Errorf("device %s: free %q, holders %+v: %w", id, d.Free, d.Holders, err)
	}
	return nil
}

// waitGone waits until nvidia-smi no longer lists pid.
func (c *checker) waitGone(ctx context.Context, pid int) error {
	return poll(ctx, 30*time.Second, func() (bool, error) {
		apps, err := c.computeApps()
		if err != nil {
			return false, err
		}
		_, still := apps[pid]
		return !still, nil
	})
}

func uuids(ds []cudaDevice) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.UUID
	}
	return out
}

// smiLists says whether nvidia-smi -L's lines name exactly the wanted
// UUIDs.
func smiLists(lines []string, want ...string) error {
	var got []string
	for _, l := range lines {
		if _, u, ok := strings.Cut(l, "(UUID: "); ok {
			got = append(got, strings.TrimSuffix(u, ")"))
		}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("nvidia-smi -L in the kernel lists %v, want %v", got, want)
	}
	return nil
}
