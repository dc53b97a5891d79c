package coordinator_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
)

// instantAgents answer at once and report kernel starts straight back to
// the coordinator, as an agent on the same machine would; they measure the
// coordinator's own latency, not an agent's.
type instantAgents struct {
	mu     sync.Mutex
	c      *coordinator.Coordinator
	epochs map[domain.AgentID]int64
	wg     sync.WaitGroup
	ctx    context.Context
}

func (a *instantAgents) CheckAndPull(_ context.Context, _ domain.AgentID, images []string) (map[string]coordinator.PullState, error) {
	out := map[string]coordinator.PullState{}
	for _, img := range images {
		out[img] = coordinator.PullState{Ready: true}
	}
	return out, nil
}

func (a *instantAgents) CreateKernels(_ context.Context, agent domain.AgentID, specs []coordinator.KernelSpec) error {
	a.mu.Lock()
	epoch := a.epochs[agent]
	a.mu.Unlock()
	for _, s := range specs {
		ev := domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: agent, Epoch: epoch, Kernel: s.Kernel, At: time.Now()}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			_ = a.c.HandleEvent(a.ctx, ev)
		}()
	}
	return nil
}

func (a *instantAgents) DestroyKernel(context.Context, domain.AgentID, domain.KernelID, bool) error {
	return nil
}

// BenchmarkSubmitToRunning measures submit → RUNNING with the real Run
// loop, real clock, SQLite on disk and instant agents: one session at a
// time, each submitted with a mark, as the API does.
func BenchmarkSubmitToRunning(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := domain.DefaultRegistry()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "s.db"), sqlite.Options{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.PutResourceGroup(ctx, domain.ResourceGroup{Name: "default", State: domain.GroupActive,
		Sequencer: "fifo", Selector: "concentrated", HeadOfLine: domain.HOLSkip, MaxRetries: 3, Timeouts: domain.DefaultTimeouts()}); err != nil {
		b.Fatal(err)
	}
	agents := &instantAgents{epochs: map[domain.AgentID]int64{}, ctx: ctx}
	capacity, _ := reg.ParseSlots(map[string]string{"cpu": "1000000", "mem": "1000000g"})
	for i := range 4 {
		a, err := st.RegisterAgent(ctx, domain.Agent{ID: domain.AgentID(fmt.Sprintf("a%d", i)), ResourceGroup: "default",
			Architecture: "x86_64", Status: domain.AgentAlive, Schedulable: true, Capacity: capacity}, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		agents.epochs[a.ID] = a.Epoch
	}
	c := coordinator.New(coordinator.Deps{Store: st, Agents: agents, Scheduler: scheduler.New(scheduler.NewRegistry())},
		coordinator.Config{ShortInterval: time.Second})
	agents.c = c
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	req, _ := reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g"})
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := domain.SessionID(fmt.Sprintf("s-%07d", i))
		start := time.Now()
		s := domain.Session{ID: id, Owner: domain.Owner{User: "u", Project: "p", Domain: "d"}, Type: domain.TypeInteractive,
			Image: "sleep", Architecture: "x86_64", ResourceGroup: "default", ClusterMode: domain.SingleNode, ClusterSize: 1,
			Requested: req, Status: domain.SessionPending, CreatedAt: start}
		k := domain.Kernel{ID: domain.KernelID(string(id) + "-k0"), SessionID: id, ClusterRole: domain.RoleMain,
			Image: "sleep", Architecture: "x86_64", Requested: req, Status: domain.KernelPending}
		if err := st.CreateSession(ctx, s, []domain.Kernel{k}); err != nil {
			b.Fatal(err)
		}
		c.Mark()
		for {
			got, err := st.GetSession(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if got.Session.Status == domain.SessionRunning {
				break
			}
			if time.Since(start) > 5*time.Second {
				h, _ := st.History(ctx, id)
				b.Fatalf("session %s stuck in %v, kernels %+v, history %+v", id, got.Session.Status, got.Kernels, h)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	cancel()
	<-done
	agents.wg.Wait()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
}
