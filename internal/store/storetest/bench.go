package storetest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// The benchmark's data set, which each engine seeds its own fastest way:
// group BenchGroup; agents BenchAgentID(0..agents-1), ALIVE and
// schedulable, each offering cpu 16 (BenchAgentCPU) and mem 64g; sessions
// BenchSessionID(0..sessions-1), PENDING, one kernel BenchKernelID(i) each,
// requesting cpu 1 and mem 1g.
const BenchGroup = "bench"

// The benchmark's size: BenchSessions sessions over BenchAgents agents,
// each offering BenchAgentCPU cpus.
const (
	BenchAgentCPU = 16
	BenchSessions = 10_000
	BenchAgents   = 1_000
)

// BenchSeed is an engine's set-based SQL that writes the benchmark's data
// set in the stored form: agents, then sessions, then kernels, each with
// {rows} where the number of rows goes (BenchAgents or BenchSessions) and,
// in the agents', {cpu} where each agent's cpu count goes.
type BenchSeed struct {
	Agents, Sessions, Kernels string
}

// BenchApplyPlanOn makes a database with e, opens a store on it, creates
// BenchGroup, writes the data set with seed, has the database analyze it,
// and runs BenchApplyPlan.
func BenchApplyPlanOn(b *testing.B, e Engine, seed BenchSeed) {
	s, reg := benchStore(b, e, seed, "round-robin", BenchAgents, BenchSessions, BenchAgentCPU)
	BenchApplyPlan(b, s, reg, BenchSessions, BenchAgents)
}

// benchStore makes a database with e, opens a store on it, creates
// BenchGroup with selector, writes the data set at the given size, with
// cpu cpus per agent, with seed and has the database analyze it. The store is closed when b ends.
func benchStore(b *testing.B, e Engine, seed BenchSeed, selector string, agents, sessions, cpu int) (store.Store, *domain.Registry) {
	b.Helper()
	db := e.NewDB(b)
	reg := domain.DefaultRegistry()
	s, err := e.Open(b.Context(), db, Options{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	g := domain.ResourceGroup{Name: BenchGroup, State: domain.GroupActive, Sequencer: "fifo",
		Selector: selector, HeadOfLine: domain.HOLSkip, MaxRetries: 3}
	if err := s.PutResourceGroup(b.Context(), g); err != nil {
		b.Fatal(err)
	}
	rows := func(q string, n int) string { return strings.ReplaceAll(q, "{rows}", strconv.Itoa(n)) }
	e.Exec(b, db, strings.ReplaceAll(rows(seed.Agents, agents), "{cpu}", strconv.Itoa(cpu)))
	e.Exec(b, db, rows(seed.Sessions, sessions))
	e.Exec(b, db, rows(seed.Kernels, sessions))
	e.Exec(b, db, "ANALYZE")
	return s, reg
}

// BenchAgentID names the i-th benchmark agent.
func BenchAgentID(i int) string { return "a" + strconv.Itoa(i) }

// BenchSessionID names the i-th benchmark session.
func BenchSessionID(i int) string { return "s" + strconv.Itoa(i) }

// BenchKernelID names the i-th benchmark session's kernel.
func BenchKernelID(i int) string { return "s" + strconv.Itoa(i) + "-k0" }

// BenchApplyPlan measures applying one plan that places every seeded
// session, round robin over the agents, and reports sessions/s. Between
// iterations, with the timer stopped, every session is sent back to
// PENDING, releasing its slots.
func BenchApplyPlan(b *testing.B, s store.Store, reg *domain.Registry, sessions, agents int) {
	slots, err := reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g"})
	if err != nil {
		b.Fatal(err)
	}
	plan := framework.Plan{Group: BenchGroup, Placements: make([]framework.Placement, sessions)}
	ids := make([]domain.SessionID, sessions)
	for i := range sessions {
		ids[i] = domain.SessionID(BenchSessionID(i))
		plan.Placements[i] = framework.Placement{Session: ids[i], Kernels: []framework.KernelPlacement{{
			Kernel: domain.KernelID(BenchKernelID(i)), Agent: domain.AgentID(BenchAgentID(i % agents)), Slots: slots,
		}}}
	}
	ctx := b.Context()
	back := domain.Transition{Session: domain.SessionPending, Kernel: domain.KernelPending}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := s.TransitionSessions(ctx, ids, []domain.SessionStatus{domain.SessionScheduled}, back, "", at(1)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := s.ApplyPlan(ctx, plan, at(2))
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Applied) != sessions {
			b.Fatalf("applied %d of %d sessions; first rejection %+v", len(res.Applied), sessions, res.Rejected[0])
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(sessions*b.N)/b.Elapsed().Seconds(), "sessions/s")
	if err := CheckInvariants(ctx, s); err != nil {
		b.Fatal(err)
	}
}
