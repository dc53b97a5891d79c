package manager_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/manager"
	"github.com/sokovan-go/sokovan/internal/store"
)

// The test binary doubles as the http-echo kernel, as `sokovan` does.
func TestMain(m *testing.M) {
	if code, ok := process.RunChild(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

type devRun struct {
	t      *testing.T
	info   manager.DevInfo
	cancel context.CancelFunc
	done   chan error
}

func startDev(t *testing.T, dir string, mods ...func(*manager.DevConfig)) *devRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan manager.DevInfo, 1)
	d := &devRun{t: t, cancel: cancel, done: make(chan error, 1)}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.DevConfig{DataDir: dir, Listen: "127.0.0.1:0", Agents: 2,
		AgentCapacity: map[string]string{"cpu": "64", "mem": "64g"}, SelfExe: self,
		Coordinator: coordinator.Config{ShortInterval: 50 * time.Millisecond}}
	for _, m := range mods {
		m(&cfg)
	}
	go func() {
		d.done <- manager.RunDev(ctx, cfg, func(i manager.DevInfo) { ready <- i })
	}()
	select {
	case d.info = <-ready:
	case err := <-d.done:
		t.Fatalf("dev mode did not start: %v", err)
	}
	t.Cleanup(d.stop)
	return d
}

func (d *devRun) stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	if err := <-d.done; err != nil {
		d.t.Errorf("dev mode stopped with %v", err)
	}
	d.cancel = nil
}

func (d *devRun) submit(id, image string, n int, mode domain.ClusterMode) domain.SessionID {
	d.t.Helper()
	p := d.info.Parts
	req, _ := p.Slots.ParseSlots(map[string]string{"cpu": "1", "mem": "64m"})
	sid := domain.SessionID(id)
	s := domain.Session{ID: sid, Name: id, Owner: domain.Owner{User: "admin", Project: "default", Domain: "default"},
		Type: domain.TypeBatch, Image: image, Architecture: "x86_64", ResourceGroup: "default", ClusterMode: mode,
		ClusterSize: n, Requested: req, Status: domain.SessionPending, CreatedAt: time.Now()}
	ks := make([]domain.Kernel, n)
	for i := range ks {
		role := domain.RoleSub
		if i == 0 {
			role = domain.RoleMain
		}
		ks[i] = domain.Kernel{ID: domain.KernelID(fmt.Sprintf("%s-k%d", id, i)), SessionID: sid, ClusterRole: role,
			ClusterIdx: i, Image: image, Architecture: "x86_64", Requested: req.Clone(), Status: domain.KernelPending}
	}
	if err := p.Store.CreateSession(context.Background(), s, ks); err != nil {
		d.t.Fatal(err)
	}
	p.Coordinator.Mark()
	return sid
}

// waitFor polls until every session is in its wanted status.
func (d *devRun) waitFor(want map[domain.SessionID]domain.SessionStatus) {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var wrong []string
		for id, st := range want {
			s, err := d.info.Parts.Store.GetSession(context.Background(), id)
			if err != nil {
				d.t.Fatal(err)
			}
			if s.Session.Status != st {
				wrong = append(wrong, fmt.Sprintf("%s is %v (want %v, reason %q)", id, s.Session.Status, st, s.Session.StatusReason))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("%d sessions not where expected, e.g. %s", len(wrong), wrong[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDevModeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	dir := t.TempDir()
	d := startDev(t, dir)
	ctx := context.Background()
	st := d.info.Parts.Store
	want := map[domain.SessionID]domain.SessionStatus{}
	var sleeps []domain.SessionID
	for i := range 44 {
		id := d.submit(fmt.Sprintf("sleep-%02d", i), "sleep", 1, domain.SingleNode)
		want[id], sleeps = domain.SessionRunning, append(sleeps, id)
	}
	multi := d.submit("multi", "sleep", 2, domain.MultiNode)
	want[multi] = domain.SessionRunning
	ok := d.submit("exit-0", "exit:0", 1, domain.SingleNode)
	bad := d.submit("exit-3", "exit:3", 1, domain.SingleNode)
	unknown := d.submit("unknown", "no-such-image", 1, domain.SingleNode)
	echo := d.submit("echo", "http-echo", 1, domain.SingleNode)
	ok2 := d.submit("exit-0b", "exit:0", 1, domain.SingleNode)
	want[ok], want[bad], want[unknown], want[echo], want[ok2] = domain.SessionTerminated, domain.SessionTerminated,
		domain.SessionCancelled, domain.SessionRunning, domain.SessionTerminated
	if len(want) != 50 {
		t.Fatalf("%d sessions, want 50", len(want))
	}
	d.waitFor(want)

	if s, _ := st.GetSession(ctx, bad); s.Kernels[0].ExitCode == nil || *s.Kernels[0].ExitCode != 3 || s.Session.Outcome != domain.OutcomeFailure {
		t.Fatalf("exit:3: %+v kernels %+v", s.Session, s.Kernels)
	}
	if s, _ := st.GetSession(ctx, ok); s.Session.Outcome != domain.OutcomeSuccess {
		t.Fatalf("exit:0 outcome %v", s.Session.Outcome)
	}
	if s, _ := st.GetSession(ctx, unknown); !strings.Contains(s.Session.StatusReason, "not in the catalog") {
		t.Fatalf("unknown image reason %q", s.Session.StatusReason)
	}
	if s, _ := st.GetSession(ctx, multi); s.Kernels[0].Agent == "" || s.Kernels[1].Agent == "" {
		t.Fatalf("multi-node kernels %+v", s.Kernels)
	}

	// Terminate the rest; every agent ends with nothing occupied.
	for id, st := range want {
		if st == domain.SessionRunning {
			if _, err := d.info.Parts.Coordinator.Terminate(ctx, id, "test done", false); err != nil {
				t.Fatal(err)
			}
			want[id] = domain.SessionTerminated
		}
	}
	d.waitFor(want)
	agents, err := st.ListAgents(ctx, store.AgentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 2 {
		t.Fatalf("%d agents registered, want 2", len(agents))
	}
	for _, a := range agents {
		if !a.Occupied.IsZero() || a.KernelCount != 0 {
			t.Fatalf("agent %s still holds %v (%d kernels)", a.ID, a.Occupied, a.KernelCount)
		}
	}
}

// TestDevModeMultiKernelBatchSucceeds: a two-kernel batch session on two
// agents whose kernels both exit 0 succeeds, though the kernel that is
// still running when the other's end is seen is destroyed for it. Real
// processes end in either order and either may be destroyed, so several
// sessions cover the orders.
func TestDevModeMultiKernelBatchSucceeds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel()
	d := startDev(t, t.TempDir())
	want := map[domain.SessionID]domain.SessionStatus{}
	for i := range 5 {
		want[d.submit(fmt.Sprintf("multi-exit-0-%d", i), "exit:0", 2, domain.MultiNode)] = domain.SessionTerminated
	}
	d.waitFor(want)
	for id := range want {
		s, err := d.info.Parts.Store.GetSession(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Session.Outcome != domain.OutcomeSuccess {
			t.Errorf("%s: outcome %v, want success; kernels %+v", id, s.Session.Outcome, s.Kernels)
		}
	}
}

// TestDevModeRestartSettlesDeadKernels: stopping dev mode ends the
// running kernels with their agents, and the agents report those ends
// before the manager stops, so the sessions they ran end (outcome failure)
// rather than wait for the next start to find the kernels gone; the next
// start carries on with new sessions.
func TestDevModeRestartSettlesDeadKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	dir := t.TempDir()
	d := startDev(t, dir)
	running := d.submit("running", "sleep", 1, domain.SingleNode)
	d.waitFor(map[domain.SessionID]domain.SessionStatus{running: domain.SessionRunning})
	token := d.info.AdminToken
	d.stop()

	// While stopped: a new session arrives in the database.
	d2 := startDev(t, dir)
	if d2.info.AdminToken != token {
		t.Fatal("the admin token changed across a restart")
	}
	later := d2.submit("later", "sleep", 1, domain.SingleNode)
	d2.waitFor(map[domain.SessionID]domain.SessionStatus{running: domain.SessionTerminated, later: domain.SessionRunning})
	s, err := d2.info.Parts.Store.GetSession(context.Background(), running)
	if err != nil {
		t.Fatal(err)
	}
	if k := s.Kernels[0]; k.Status != domain.KernelTerminated || !strings.Contains(k.StatusReason, "SIGTERM") ||
		s.Session.Outcome != domain.OutcomeFailure {
		t.Fatalf("kernel of the earlier run: %v %q, session outcome %v; want TERMINATED by SIGTERM as dev mode stopped, and failure",
			k.Status, k.StatusReason, s.Session.Outcome)
	}
	// What the ended kernel wrote is still there to read (README says so).
	rc, err := d2.info.Parts.Agents.Logs(context.Background(), s.Kernels[0].Agent, s.Kernels[0].ID, 0)
	if err != nil {
		t.Fatalf("logs of the earlier run's kernel: %v", err)
	}
	out, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(out), "sleep: sleeping until") {
		t.Errorf("logs of the earlier run's kernel: %q", out)
	}
	if info, err := os.Stat(dir + "/admin-token"); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("admin-token: %v mode %v", err, info.Mode())
	}
}

// TestDevAgentGivenOnlyCPUOffersTheMachinesMemory: `sokovan dev
// --agent-cpu 4` names no memory, and the agents must still offer the
// machine's; with none, every session (which must ask for memory) would
// wait for a larger agent for ever.
func TestDevAgentGivenOnlyCPUOffersTheMachinesMemory(t *testing.T) {
	t.Parallel()
	d := startDev(t, t.TempDir(), func(c *manager.DevConfig) { c.AgentCapacity = map[string]string{"cpu": "4"} })
	p := d.info.Parts
	var agents []domain.Agent
	// Dev mode says it is ready before its agents have registered.
	for deadline := time.Now().Add(30 * time.Second); len(agents) < 2; time.Sleep(20 * time.Millisecond) {
		var err error
		if agents, err = p.Store.ListAgents(context.Background(), store.AgentFilter{}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d agents registered, want 2", len(agents))
		}
	}
	cpu, _ := p.Slots.Lookup("cpu")
	mem, _ := p.Slots.Lookup("mem")
	for _, a := range agents {
		if got := a.Capacity[cpu]; got != 4000 {
			t.Errorf("%s offers %v cpu, want 4", a.ID, got)
		}
		if a.Capacity[mem] <= 0 {
			t.Errorf("%s offers no memory: %v", a.ID, a.Capacity)
		}
	}
	id := d.submit("fits", "sleep", 1, domain.SingleNode)
	d.waitFor(map[domain.SessionID]domain.SessionStatus{id: domain.SessionRunning})
}
