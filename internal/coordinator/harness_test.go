package coordinator_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/pgtest"
	"github.com/sokovan-go/sokovan/internal/store/postgres"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// harness is a coordinator over a real store, driven step by step with an
// injected clock and fake agents.
type harness struct {
	t      testing.TB
	ctx    context.Context
	st     store.Store
	reg    *domain.Registry
	clock  *clock.Manual
	agents *fakeAgents
	c      *coordinator.Coordinator
	n      int
	// async leaves agent calls a cycle did not wait for running after the
	// step; otherwise a step waits for them, so the state it leaves is
	// settled when the test reads it.
	async bool
}

var engines = []string{"sqlite", "postgres"}

func openStore(t testing.TB, engine string, reg *domain.Registry) store.Store {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	switch engine {
	case "sqlite":
		st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "sokovan.db"), sqlite.Options{Registry: reg})
	case "postgres":
		st, err = postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{Registry: reg})
	}
	if err != nil {
		t.Fatalf("open %s: %v", engine, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newHarness(t testing.TB, engine string, agents int, group func(*domain.ResourceGroup)) *harness {
	t.Helper()
	reg := domain.DefaultRegistry()
	clock := clock.NewManual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	h := &harness{t: t, ctx: context.Background(), st: openStore(t, engine, reg), reg: reg, clock: clock,
		agents: newFakeAgents(uint64(agents)+7, clock.Now)}
	g := domain.ResourceGroup{Name: "default", State: domain.GroupActive, Sequencer: "fifo", Selector: "dispersed",
		HeadOfLine: domain.HOLSkip, MaxRetries: 3, Timeouts: domain.DefaultTimeouts()}
	if group != nil {
		group(&g)
	}
	if err := h.st.PutResourceGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	for i := range agents {
		capacity, _ := reg.ParseSlots(map[string]string{"cpu": "8", "mem": "16g"})
		a, err := h.st.RegisterAgent(h.ctx, domain.Agent{ID: domain.AgentID(fmt.Sprintf("agent-%d", i)),
			ResourceGroup: "default", Architecture: "x86_64", Status: domain.AgentAlive, Schedulable: true,
			Capacity: capacity}, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		h.agents.epochs[a.ID] = a.Epoch
	}
	h.c = coordinator.New(coordinator.Deps{Store: h.st, Agents: h.agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
		Clock: clock}, coordinator.Config{CallTimeout: time.Second})
	// Agent calls a cycle left running end before the store closes.
	ctx, cancel := context.WithCancel(h.ctx)
	h.ctx = ctx
	t.Cleanup(func() {
		cancel()
		h.c.WaitCalls()
	})
	return h
}

// submit creates a PENDING session of n kernels asking cpu each.
func (h *harness) submit(image, cpu string, n int, mode domain.ClusterMode, deps ...domain.SessionID) domain.SessionID {
	h.t.Helper()
	return h.submitWith(nil, image, cpu, n, mode, deps...)
}

// submitWith is submit with mod applied to the session before it is
// stored.
func (h *harness) submitWith(mod func(*domain.Session), image, cpu string, n int, mode domain.ClusterMode, deps ...domain.SessionID) domain.SessionID {
	h.t.Helper()
	h.n++
	id := domain.SessionID(fmt.Sprintf("s-%04d", h.n))
	req, err := h.reg.ParseSlots(map[string]string{"cpu": cpu, "mem": "1g"})
	if err != nil {
		h.t.Fatal(err)
	}
	s := domain.Session{ID: id, Name: string(id), Owner: domain.Owner{User: "alice", Project: "p", Domain: "d"},
		Type: domain.TypeBatch, Image: image, Architecture: "x86_64", ResourceGroup: "default", ClusterMode: mode,
		ClusterSize: n, Requested: req, Status: domain.SessionPending, CreatedAt: h.clock.Now(), DependsOn: deps}
	if mod != nil {
		mod(&s)
	}
	kernels := make([]domain.Kernel, n)
	for i := range kernels {
		role := domain.RoleSub
		if i == 0 {
			role = domain.RoleMain
		}
		kernels[i] = domain.Kernel{ID: domain.KernelID(fmt.Sprintf("%s-k%d", id, i)), SessionID: id, ClusterRole: role,
			ClusterIdx: i, Image: image, Architecture: "x86_64", Requested: req.Clone(), Status: domain.KernelPending}
	}
	if err := h.st.CreateSession(h.ctx, s, kernels); err != nil {
		h.t.Fatal(err)
	}
	h.c.Mark()
	return id
}

// step delivers queued agent events, then runs one cycle, then checks the
// invariants.
func (h *harness) step() {
	h.t.Helper()
	if err := h.agents.deliver(h.ctx, h.c); err != nil {
		h.t.Fatalf("deliver: %v", err)
	}
	if err := h.c.Cycle(h.ctx); err != nil {
		h.t.Fatalf("cycle: %v", err)
	}
	if !h.async {
		h.c.WaitCalls()
	}
	h.check()
}

func (h *harness) steps(n int) {
	h.t.Helper()
	for range n {
		h.step()
	}
}

// advance moves the clock; live agents heartbeat, so only the ones the test
// took down fall silent.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	agents, err := h.st.ListAgents(h.ctx, store.AgentFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, a := range agents {
		if h.agents.down[a.ID] {
			continue
		}
		if a.Status == domain.AgentLost {
			// An agent that comes back registers again, under a new epoch
			// that fences its older reports.
			a.Status = domain.AgentAlive
			back, err := h.st.RegisterAgent(h.ctx, a, h.clock.Now())
			if err != nil {
				h.t.Fatal(err)
			}
			h.agents.mu.Lock()
			h.agents.epochs[a.ID] = back.Epoch
			h.agents.mu.Unlock()
			continue
		}
		if err := h.st.Heartbeat(h.ctx, a.ID, a.Epoch, h.clock.Now()); err != nil {
			h.t.Fatal(err)
		}
	}
}

// until steps until the session reaches want, failing after 30 steps.
func (h *harness) until(id domain.SessionID, want domain.SessionStatus) {
	h.t.Helper()
	for range 30 {
		if h.status(id) == want {
			return
		}
		h.step()
	}
	h.wantStatus(id, want)
}

func (h *harness) session(id domain.SessionID) store.SessionWithKernels {
	h.t.Helper()
	s, err := h.st.GetSession(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) status(id domain.SessionID) domain.SessionStatus {
	return h.session(id).Session.Status
}

func (h *harness) wantStatus(id domain.SessionID, want domain.SessionStatus) {
	h.t.Helper()
	if got := h.status(id); got != want {
		h.t.Fatalf("session %s is %v, want %v; history:\n%s", id, got, want, h.history(id))
	}
}

func (h *harness) history(id domain.SessionID) string {
	entries, err := h.st.History(h.ctx, id)
	if err != nil {
		return err.Error()
	}
	var out string
	for _, e := range entries {
		out += fmt.Sprintf("  %s %s %v→%v ×%d %s\n", e.Cause, e.Result, e.From, e.To, e.Attempt, e.Message)
	}
	return out
}

func (h *harness) results(id domain.SessionID) []string {
	entries, err := h.st.History(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, string(e.Cause)+":"+string(e.Result))
	}
	return out
}

// count is how many of the session's history entries read result
// ("Handler:RESULT").
func (h *harness) count(id domain.SessionID, result string) int {
	h.t.Helper()
	n := 0
	for _, r := range h.results(id) {
		if r == result {
			n++
		}
	}
	return n
}

func (h *harness) wantHistory(id domain.SessionID, want ...string) {
	h.t.Helper()
	got := h.results(id)
	for _, w := range want {
		if !slices.Contains(got, w) {
			h.t.Fatalf("history of %s lacks %s:\n%s", id, w, h.history(id))
		}
	}
}

// sessionRank maps a live session status onto the kernel status its
// kernels must have reached.
var sessionRank = map[domain.SessionStatus]domain.KernelStatus{
	domain.SessionScheduled: domain.KernelScheduled,
	domain.SessionPreparing: domain.KernelPreparing,
	domain.SessionPrepared:  domain.KernelPrepared,
	domain.SessionCreating:  domain.KernelCreating,
	domain.SessionRunning:   domain.KernelRunning,
}

// check asserts DESIGN.md's invariants on the stored state: occupied slots
// equal the holding kernels (1); no kernel is left behind its session (2);
// a placed gang is whole (3).
func (h *harness) check() {
	h.t.Helper()
	if err := storetest.CheckInvariants(h.ctx, h.st); err != nil {
		h.t.Fatalf("invariant 1: %v", err)
	}
	sessions, err := h.st.ListSessions(h.ctx, store.SessionFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	all, err := h.st.ListKernels(h.ctx, store.KernelFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	byS := map[domain.SessionID][]domain.Kernel{}
	for _, k := range all {
		byS[k.SessionID] = append(byS[k.SessionID], k)
	}
	for _, s := range sessions {
		sk := store.SessionWithKernels{Session: s, Kernels: byS[s.ID]}
		placed := 0
		for _, k := range sk.Kernels {
			if k.Agent != "" {
				placed++
			}
			switch {
			case s.Status == domain.SessionPending && k.Status != domain.KernelPending:
				h.t.Fatalf("invariant 2: PENDING session %s has kernel %s %v", s.ID, k.ID, k.Status)
			case s.Status.Terminal() && !k.Status.Terminal():
				h.t.Fatalf("invariant 2: %v session %s has kernel %s %v", s.Status, s.ID, k.ID, k.Status)
			case sessionRank[s.Status] != 0 && !k.Status.Terminal() && k.Status < sessionRank[s.Status]:
				h.t.Fatalf("invariant 2: %v session %s has kernel %s behind it in %v", s.Status, s.ID, k.ID, k.Status)
			}
		}
		if s.Status.HoldsResources() && placed != 0 && placed != len(sk.Kernels) &&
			!slices.ContainsFunc(sk.Kernels, func(k domain.Kernel) bool { return k.Status.Terminal() }) {
			h.t.Fatalf("invariant 3: session %s has %d of %d kernels placed", s.ID, placed, len(sk.Kernels))
		}
	}
}
