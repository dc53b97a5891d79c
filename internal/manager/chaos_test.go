package manager_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/pgtest"
	"github.com/sokovan-go/sokovan/internal/store/postgres"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// The chaos test's size. CI runs the defaults (10 kills, about a minute);
// the long mode is `go test -run Chaos -chaos.kills=100 ./internal/manager/`
// (docs/OPERATIONS.md has its figures).
var (
	chaosKills    = flag.Int("chaos.kills", 10, "chaos test: how many times a manager is killed with SIGKILL")
	chaosSessions = flag.Int("chaos.sessions", 2000, "chaos test: sessions submitted, in one wave per kill")
)

// proc is a sokovan process the chaos test can kill -9 and start again.
type proc struct {
	name string
	args []string
	cmd  *exec.Cmd
	log  *os.File
}

func (p *proc) start(t *testing.T, bin string) {
	t.Helper()
	p.cmd = exec.Command(bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
	p.cmd = nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestChaosManyManagers is the distributed-mode chaos test: 3 manager
// processes on one PostgreSQL database with Redis Streams between them, 4
// sim agents failing over between managers, 2,000 sessions (-chaos.sessions)
// in waves. Every ~3 s a random manager is killed with SIGKILL and started
// again, 10 times (-chaos.kills); one agent is killed once for good, half
// way. At the end no session is lost, every session is
// RUNNING or ended (cancelled and errored ones with a reason), every agent's
// occupied slots equal its live kernels, and no kernel is on two agents.
func TestChaosManyManagers(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: minutes, real processes")
	}
	dsn, rurl := pgtest.NewDatabase(t), redisURL(t)
	stream := fmt.Sprintf("sokovan-chaos:%d", time.Now().UnixNano())
	dir := t.TempDir()
	bin := filepath.Join(dir, "sokovan")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/sokovan-go/sokovan/cmd/sokovan").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctx := context.Background()
	opts, _ := redis.ParseURL(rurl)
	rc := redis.NewClient(opts)
	defer rc.Close()
	defer rc.Del(ctx, stream)

	var managers, agents []*proc
	var urls []string
	for i := range 3 {
		addr := freeAddr(t)
		urls = append(urls, "http://"+addr)
		f, _ := os.Create(filepath.Join(dir, fmt.Sprintf("manager-%d.log", i)))
		managers = append(managers, &proc{name: fmt.Sprintf("manager-%d", i), log: f, args: []string{"server",
			"--db", dsn, "--listen", addr, "--agent-token", "tok", "--insecure-shared-agent-token", "--events", rurl, "--events-stream", stream,
			"--config", "etcd://" + etcdEndpoint(t) + "/sokovan-chaos/" + stream,
			"--cycle-interval", "100ms", "--sweep-interval", "500ms", "--heartbeat-timeout", "3s", "--lost-grace", "2s"}})
	}
	for _, m := range managers {
		m.start(t, bin)
	}
	defer func() {
		for _, p := range append(managers, agents...) {
			p.kill()
		}
	}()
	// About a tenth of the sessions sleep for good (~220 kernels of the
	// default 2,000), and they must all fit on the three agents left after
	// one is lost, or some would rightly wait for capacity and never settle:
	// 128 cpu each, more for a larger -chaos.sessions (twice the need).
	agentCPU := strconv.Itoa(max(128, *chaosSessions/15))
	agentAddrs := map[domain.AgentID]string{}
	for i := range 4 {
		addr := freeAddr(t)
		id := domain.AgentID(fmt.Sprintf("sim-%d", i))
		agentAddrs[id] = "http://" + addr
		f, _ := os.Create(filepath.Join(dir, fmt.Sprintf("agent-%d.log", i)))
		a := &proc{name: string(id), log: f, args: []string{"agent", "run", "--runtime", "sim", "--id", string(id),
			"--manager", strings.Join(urls, ","), "--token", "tok", "--listen", addr, "--cpu", agentCPU, "--mem", "4t",
			"--heartbeat", "500ms", "--data-dir", filepath.Join(dir, string(id))}}
		a.start(t, bin)
		agents = append(agents, a)
	}

	reg := domain.DefaultRegistry()
	st, err := postgres.Open(ctx, dsn, postgres.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	waitForAgents(t, st, 4)

	rng := rand.New(rand.NewPCG(7, 11))
	req, _ := reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g"})
	total, kills := *chaosSessions, *chaosKills
	if total < 1 || kills < 1 {
		t.Fatalf("-chaos.sessions %d and -chaos.kills %d must be positive", total, kills)
	}
	wave := (total + kills - 1) / kills
	var ids []domain.SessionID
	submit := func(n int) {
		for range n {
			i := len(ids)
			id := domain.SessionID(fmt.Sprintf("c-%05d", i))
			image, size, mode := "exit:0", 1, domain.SingleNode
			switch r := rng.IntN(20); {
			case r == 0:
				size, mode = 2, domain.MultiNode
			case r <= 2:
				image = "sleep"
			}
			s := domain.Session{ID: id, Name: string(id), Owner: domain.Owner{User: "chaos", Project: "p", Domain: "d"},
				Type: domain.TypeBatch, Image: image, Architecture: "x86_64", ResourceGroup: "default", ClusterMode: mode,
				ClusterSize: size, Requested: req, Status: domain.SessionPending, CreatedAt: time.Now(),
				Env: map[string]string{"SOKOVAN_EXIT_AFTER": "0.5"}}
			ks := make([]domain.Kernel, size)
			for k := range ks {
				ks[k] = domain.Kernel{ID: domain.KernelID(fmt.Sprintf("%s-k%d", id, k)), SessionID: id, ClusterRole: domain.RoleMain,
					ClusterIdx: k, Image: image, Architecture: "x86_64", Requested: req.Clone(), Status: domain.KernelPending}
				if k > 0 {
					ks[k].ClusterRole = domain.RoleSub
				}
			}
			if err := st.CreateSession(ctx, s, ks); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}

	// Chaos: sessions arrive in waves while managers die and come back.
	start := time.Now()
	killedAgent := false
	for k := range kills {
		submit(min(wave, total-len(ids)))
		victim := managers[rng.IntN(len(managers))]
		victim.kill()
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
		victim.start(t, bin)
		if !killedAgent && k >= kills/2 {
			agents[3].kill() // for good: its machine is gone
			killedAgent = true
		}
		time.Sleep(time.Duration(1500+rng.IntN(1500)) * time.Millisecond)
	}
	t.Logf("chaos phase: %s", time.Since(start).Round(time.Second))

	// Calm: wait for every session to settle.
	settled := map[domain.SessionStatus]bool{domain.SessionRunning: true, domain.SessionTerminated: true,
		domain.SessionCancelled: true, domain.SessionError: true}
	deadline := time.Now().Add(3 * time.Minute)
	var counts map[domain.SessionStatus]int
	for {
		all, err := st.ListSessions(ctx, store.SessionFilter{User: "chaos"})
		if err != nil {
			t.Fatal(err)
		}
		counts = map[domain.SessionStatus]int{}
		open := 0
		for _, s := range all {
			counts[s.Status]++
			if !settled[s.Status] {
				open++
			}
		}
		if len(all) != total {
			t.Fatalf("%d sessions in the store, want %d: sessions were lost", len(all), total)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			var why []string
			for _, s := range all {
				if settled[s.Status] || len(why) == 5 {
					continue
				}
				sk, _ := st.GetSession(ctx, s.ID)
				hist, _ := st.History(ctx, s.ID)
				if len(hist) > 6 {
					hist = hist[len(hist)-6:]
				}
				why = append(why, fmt.Sprintf("%s %v (%q) kernels %+v\n  last history %+v", s.ID, s.Status, s.StatusReason, sk.Kernels, hist))
			}
			for _, m := range managers {
				raw, _ := os.ReadFile(m.log.Name())
				var errs []string
				for _, l := range strings.Split(string(raw), "\n") {
					if strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
						errs = append(errs, l)
					}
				}
				if len(errs) > 15 {
					errs = errs[len(errs)-15:]
				}
				why = append(why, m.name+" log:\n  "+strings.Join(errs, "\n  "))
			}
			t.Fatalf("sessions still moving after the calm period: %v\n%s", counts, strings.Join(why, "\n"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	fmt.Printf("chaos: %d sessions, 3 managers killed %d times, 1 agent lost, settled %s after the start: %v\n",
		total, kills, time.Since(start).Round(time.Second), counts)
	t.Logf("settled after %s: %v", time.Since(start).Round(time.Second), counts)

	// Stop the managers before the checks: the invariant check reads
	// agents, kernels and sessions one after another, and a sleep kernel
	// exiting between two reads would otherwise look like a session ahead
	// of its kernel. With no manager left the store holds still.
	for _, m := range managers {
		m.kill()
	}

	all, _ := st.ListSessions(ctx, store.SessionFilter{User: "chaos"})
	for _, s := range all {
		if (s.Status == domain.SessionCancelled || s.Status == domain.SessionError) && s.StatusReason == "" {
			t.Errorf("%s is %v without a reason", s.ID, s.Status)
		}
	}
	if err := storetest.CheckInvariants(ctx, st); err != nil {
		t.Fatalf("occupied slots disagree with live kernels: %v", err)
	}
	// No kernel on two agents, and every kernel the store has RUNNING on a
	// live agent really runs there.
	client := agentrpc.NewAgentClient(addrLookup(agentAddrs), "tok")
	// where: kernels an agent has (running or exited but not yet cleaned
	// up); an exit still on its way to the store is not a disagreement.
	where := map[domain.KernelID]domain.AgentID{}
	for id := range agentAddrs {
		if id == "sim-3" {
			continue // killed
		}
		ks, err := client.Kernels(ctx, id)
		if err != nil {
			t.Fatalf("kernels of %s: %v", id, err)
		}
		for _, k := range ks {
			if other, dup := where[k.ID]; dup {
				t.Fatalf("kernel %s is on %s and %s", k.ID, other, id)
			}
			where[k.ID] = id
		}
	}
	running, err := st.ListKernels(ctx, store.KernelFilter{Statuses: []domain.KernelStatus{domain.KernelRunning}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range running {
		if k.Agent == "sim-3" {
			t.Errorf("kernel %s still RUNNING on the lost agent", k.ID)
			continue
		}
		if where[k.ID] != k.Agent {
			t.Errorf("kernel %s is RUNNING on %s in the store but that agent does not have it", k.ID, k.Agent)
		}
	}
}

type addrLookup map[domain.AgentID]string

func (a addrLookup) GetAgent(_ context.Context, id domain.AgentID) (domain.Agent, error) {
	return domain.Agent{ID: id, Address: a[id]}, nil
}

func waitForAgents(t *testing.T, st store.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		as, err := st.ListAgents(context.Background(), store.AgentFilter{Statuses: []domain.AgentStatus{domain.AgentAlive}})
		if err == nil && len(as) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d agents registered (%v)", len(as), n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
