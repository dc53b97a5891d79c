package coordinator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// newJob stores a NEW job of alice's.
func (h *harness) newJob(id string, min int, permit time.Duration, policy domain.FailurePolicy) domain.JobID {
	h.t.Helper()
	j := domain.Job{ID: domain.JobID(id), Name: id, Owner: domain.Owner{User: "alice", Project: "p", Domain: "d"},
		MinAvailable: min, PermitTimeout: permit, FailurePolicy: policy, State: domain.JobNew,
		StateChangedAt: h.clock.Now(), CreatedAt: h.clock.Now()}
	if err := h.st.CreateJob(h.ctx, j); err != nil {
		h.t.Fatal(err)
	}
	return j.ID
}

func (h *harness) member(job domain.JobID, image string) domain.SessionID {
	h.t.Helper()
	return h.submitWith(func(s *domain.Session) { s.Job = job }, image, "1", 1, domain.SingleNode)
}

func (h *harness) jobState(id domain.JobID) domain.JobState {
	h.t.Helper()
	j, err := h.st.GetJob(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j.State
}

func (h *harness) wantJob(id domain.JobID, want domain.JobState) {
	h.t.Helper()
	if got := h.jobState(id); got != want {
		h.t.Fatalf("job %s is %v, want %v (history %s)", id, got, want, h.jobHistory(id))
	}
}

func (h *harness) jobHistory(id domain.JobID) string {
	h.t.Helper()
	hist, err := h.st.JobHistory(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	var parts []string
	for _, e := range hist {
		parts = append(parts, string(e.Cause)+":"+e.From.String()+"→"+e.To.String())
	}
	return strings.Join(parts, " ")
}

// The seed's main line with the injected clock: NEW until a member is
// added, ACCEPTED while the gang is short, STARTING → RUNNING as the gang
// is placed whole, COMPLETING once nothing runs, COMPLETED 30 s later,
// EXPIRED after the retention — each move in the job's history.
func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		j := h.newJob("spark", 2, time.Minute, domain.FailureWait)
		h.step()
		h.wantJob(j, domain.JobNew)

		driver := h.member(j, "sleep")
		h.steps(3)
		h.wantJob(j, domain.JobAccepted)
		h.wantStatus(driver, domain.SessionPending) // 1 of 2 submitted

		exec := h.member(j, "sleep")
		h.until(driver, domain.SessionRunning)
		h.until(exec, domain.SessionRunning)
		h.step()
		h.wantJob(j, domain.JobRunning)

		for _, id := range []domain.SessionID{driver, exec} {
			if _, err := h.c.Terminate(h.ctx, id, "done", false); err != nil {
				t.Fatal(err)
			}
			h.until(id, domain.SessionTerminated)
		}
		h.step()
		h.wantJob(j, domain.JobCompleting)
		h.advance(29 * time.Second)
		h.step()
		h.wantJob(j, domain.JobCompleting)
		h.advance(time.Second)
		h.step()
		h.wantJob(j, domain.JobCompleted)
		h.advance(domain.DefaultJobRetention)
		h.step()
		h.wantJob(j, domain.JobExpired)
		want := "Run:NEW→ACCEPTED Run:ACCEPTED→STARTING Run:STARTING→RUNNING Complete:RUNNING→COMPLETING " +
			"Complete:COMPLETING→COMPLETED Expire:COMPLETED→EXPIRED"
		if got := h.jobHistory(j); got != want {
			t.Fatalf("history\n got %s\nwant %s", got, want)
		}
	})
}

// A one-member job stays STARTING until the Starting timeout (5 min) and
// then runs, whatever its allocations.
func TestJobStartingTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "sqlite", 1, nil)
	j := h.newJob("solo", 1, time.Minute, domain.FailureWait)
	m := h.member(j, "sleep")
	h.until(m, domain.SessionRunning)
	h.wantJob(j, domain.JobStarting)
	h.advance(5*time.Minute - time.Second)
	h.step()
	h.wantJob(j, domain.JobStarting)
	h.advance(time.Second)
	h.step()
	h.wantJob(j, domain.JobRunning)
}

// placeOne applies a plan that places only s, as a plan applier that
// committed a gang in part would leave it.
func (h *harness) placeOne(s domain.SessionID, agent domain.AgentID) {
	h.t.Helper()
	sk := h.session(s)
	var kps []framework.KernelPlacement
	for _, k := range sk.Kernels {
		kps = append(kps, framework.KernelPlacement{Kernel: k.ID, Agent: agent, Slots: k.Requested})
	}
	res, err := h.st.ApplyPlan(h.ctx, framework.Plan{Group: "default",
		Placements: []framework.Placement{{Session: s, Kernels: kps}}}, h.clock.Now())
	if err != nil || len(res.Rejected) > 0 {
		h.t.Fatalf("apply: %v %+v", err, res)
	}
}

// Permit: a member reserved while its gang is short is held SCHEDULED,
// not started; at the permit timeout its reservation is released (the
// invariants hold: occupied equals the live kernels) and, under
// failure_policy wait, the job waits again.
func TestJobPermitTimeoutReleases(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		j := h.newJob("ps", 3, time.Minute, domain.FailureWait)
		a := h.member(j, "sleep")
		b := h.member(j, "sleep")
		h.placeOne(a, "agent-0")
		h.steps(3)
		h.wantStatus(a, domain.SessionScheduled) // held at Permit
		h.wantStatus(b, domain.SessionPending)   // 2 of 3 submitted
		if len(h.agents.running()) != 0 {
			t.Fatal("a member waiting at Permit was started")
		}
		h.advance(59 * time.Second)
		h.step()
		h.wantStatus(a, domain.SessionScheduled)
		h.advance(time.Second)
		h.step()
		h.wantStatus(a, domain.SessionPending)
		if n := h.count(a, "JobPermit:EXPIRED"); n != 1 {
			t.Fatalf("history %s: want one JobPermit:EXPIRED", h.history(a))
		}
		ag, err := h.st.GetAgent(h.ctx, "agent-0")
		if err != nil {
			t.Fatal(err)
		}
		if !ag.Occupied.IsZero() || ag.KernelCount != 0 {
			t.Fatalf("agent-0 still holds %v (%d kernels) after the permit timeout", ag.Occupied, ag.KernelCount)
		}
		if s := h.jobState(j); s.Final() || s == domain.JobFailing {
			t.Fatalf("under failure_policy wait the job is %v", s)
		}
		// The third member completes the gang: all three start together.
		c := h.member(j, "sleep")
		for _, id := range []domain.SessionID{a, b, c} {
			h.until(id, domain.SessionRunning)
		}
	})
}

// Under failure_policy fail, a permit timeout with no real allocation
// fails the job and ends every member.
func TestJobPermitTimeoutFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "sqlite", 2, nil)
	j := h.newJob("ps", 3, 30*time.Second, domain.FailureFail)
	a := h.member(j, "sleep")
	b := h.member(j, "sleep")
	h.placeOne(a, "agent-1")
	h.step()
	h.advance(30 * time.Second)
	h.steps(3)
	h.until(a, domain.SessionCancelled)
	h.until(b, domain.SessionCancelled)
	h.step()
	h.wantJob(j, domain.JobFailed)
	want := "Run:NEW→ACCEPTED Run:ACCEPTED→STARTING Fail:STARTING→FAILING Fail:FAILING→FAILED"
	if got := h.jobHistory(j); got != want {
		t.Fatalf("history\n got %s\nwant %s", got, want)
	}
}

// A member that fails under failure_policy fail fails the job: the other
// members are ended and the job ends FAILED.
func TestJobMemberFailureFailsAll(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "sqlite", 2, nil)
	j := h.newJob("train", 2, time.Minute, domain.FailureFail)
	bad := h.member(j, "exit:3")
	good := h.member(j, "sleep")
	h.until(bad, domain.SessionRunning)
	h.until(good, domain.SessionRunning)
	h.agents.exitKernels()
	h.until(bad, domain.SessionTerminated)
	h.until(good, domain.SessionTerminated)
	h.step()
	h.wantJob(j, domain.JobFailed)
	if hist := h.history(good); !strings.Contains(hist, "job train failed") {
		t.Errorf("the ended member's history does not name the job: %s", hist)
	}
}

// gauge reads one unlabelled series (or the sum of a histogram's count)
// from the registry.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

// Seed 004's metrics: a member held at Permit shows as waiting and as a
// reservation until released; a gang that forms is observed with its
// size; rounds count attempts by result and their duration.
func TestJobMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "sqlite", 2, nil)
	reg := prometheus.NewRegistry()
	h.c = coordinator.New(coordinator.Deps{Store: h.st, Agents: h.agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
		Clock: h.clock, Metrics: coordinator.NewMetrics(reg)}, coordinator.Config{CallTimeout: time.Second})
	j := h.newJob("ps", 3, time.Minute, domain.FailureWait)
	a := h.member(j, "sleep")
	h.member(j, "sleep")
	h.placeOne(a, "agent-0")
	h.step()
	if w, r := metricValue(t, reg, "sokovan_permit_waiting_sessions", nil), metricValue(t, reg, "sokovan_job_reservations", nil); w != 1 || r != 1 {
		t.Fatalf("waiting %v, reservations %v; want 1 and 1", w, r)
	}
	if n := metricValue(t, reg, "sokovan_scheduling_attempts_total", map[string]string{"result": "unschedulable"}); n < 1 {
		t.Fatalf("unschedulable attempts %v", n)
	}
	h.member(j, "sleep") // completes the gang: the two pending members are placed together
	h.step()
	h.step()
	if n := metricValue(t, reg, "sokovan_job_gang_size", nil); n != 1 {
		t.Fatalf("gang size observations %v, want 1", n)
	}
	if w := metricValue(t, reg, "sokovan_permit_waiting_sessions", nil); w != 0 {
		t.Fatalf("waiting %v after the gang formed", w)
	}
	if n := metricValue(t, reg, "sokovan_scheduling_duration_seconds", map[string]string{"resource_group": "default"}); n < 2 {
		t.Fatalf("round durations observed %v", n)
	}
}

// Every edge of the job table that the coordinator raises is taken by some
// job here, with the injected clock: the main line, a member returning to
// a COMPLETING job, a job whose only member is cancelled before any
// allocation, a permit timeout under failure_policy fail and a failed
// member. The API raises the rest (Reject at admission, Fail on cancel),
// tested there.
func TestJobEveryCoordinatorEdge(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "sqlite", 2, nil)
	var jobs []domain.JobID

	// Main line, with COMPLETING → RUNNING on the way.
	main := h.newJob("main", 2, time.Minute, domain.FailureWait)
	jobs = append(jobs, main)
	a, b := h.member(main, "sleep"), h.member(main, "sleep")
	h.until(a, domain.SessionRunning)
	h.until(b, domain.SessionRunning)
	for _, id := range []domain.SessionID{a, b} {
		if _, err := h.c.Terminate(h.ctx, id, "done", false); err != nil {
			t.Fatal(err)
		}
		h.until(id, domain.SessionTerminated)
	}
	h.step()
	h.wantJob(main, domain.JobCompleting)
	late := h.member(main, "sleep")
	h.step()
	h.wantJob(main, domain.JobRunning)
	if _, err := h.c.Terminate(h.ctx, late, "never mind", false); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.wantJob(main, domain.JobCompleting)
	h.advance(domain.DefaultJobCompletingTimeout)
	h.step()
	h.advance(domain.DefaultJobRetention)
	h.step()
	h.wantJob(main, domain.JobExpired)

	// ACCEPTED → COMPLETING: the only member is cancelled while pending.
	short := h.newJob("short", 2, time.Minute, domain.FailureWait)
	jobs = append(jobs, short)
	m := h.member(short, "sleep")
	h.step()
	h.wantJob(short, domain.JobAccepted)
	if _, err := h.c.Terminate(h.ctx, m, "gave up", false); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.wantJob(short, domain.JobCompleting)

	// STARTING → RUNNING by the Starting timeout.
	solo := h.newJob("solo", 1, time.Minute, domain.FailureWait)
	jobs = append(jobs, solo)
	s := h.member(solo, "sleep")
	h.until(s, domain.SessionRunning)
	h.advance(domain.DefaultJobStartingTimeout)
	h.step()
	h.wantJob(solo, domain.JobRunning)

	// STARTING → COMPLETING: a one-member job ends before the timeout.
	quick := h.newJob("quick", 1, time.Minute, domain.FailureWait)
	jobs = append(jobs, quick)
	q := h.member(quick, "exit:0")
	h.until(q, domain.SessionRunning)
	h.wantJob(quick, domain.JobStarting)
	h.agents.exitKernels()
	h.until(q, domain.SessionTerminated)
	h.step()
	h.wantJob(quick, domain.JobCompleting)

	// STARTING → FAILING → FAILED: a permit timeout under fail.
	ps := h.newJob("ps", 3, 30*time.Second, domain.FailureFail)
	jobs = append(jobs, ps)
	p1 := h.member(ps, "sleep")
	h.member(ps, "sleep")
	h.placeOne(p1, "agent-1")
	h.step()
	h.advance(30 * time.Second)
	h.steps(4)
	h.wantJob(ps, domain.JobFailed)

	// RUNNING → FAILING: a member fails under fail.
	train := h.newJob("train", 2, time.Minute, domain.FailureFail)
	jobs = append(jobs, train)
	bad, good := h.member(train, "exit:3"), h.member(train, "sleep")
	h.until(bad, domain.SessionRunning)
	h.until(good, domain.SessionRunning)
	h.agents.exitKernels()
	h.until(good, domain.SessionTerminated)
	h.step()
	h.wantJob(train, domain.JobFailed)

	taken := map[[3]string]bool{}
	for _, j := range jobs {
		hist, err := h.st.JobHistory(h.ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range hist {
			taken[[3]string{string(e.Cause), e.From.String(), e.To.String()}] = true
		}
	}
	apiRaised := map[[2]string]bool{{"Reject", "NEW"}: true, {"Fail", "NEW"}: true, {"Fail", "ACCEPTED"}: true,
		{"Fail", "COMPLETING"}: true}
	for _, tr := range domain.JobTransitions() {
		if apiRaised[[2]string{string(tr.Event), tr.From.String()}] {
			continue
		}
		if !taken[[3]string{string(tr.Event), tr.From.String(), tr.To.String()}] {
			t.Errorf("no job took %s: %v → %v", tr.Event, tr.From, tr.To)
		}
	}
}

// resize gives an agent a new capacity, as an agent restarted with other
// resources registers it.
func (h *harness) resize(agent domain.AgentID, capacity map[string]string) {
	h.t.Helper()
	a, err := h.st.GetAgent(h.ctx, agent)
	if err != nil {
		h.t.Fatal(err)
	}
	if a.Capacity, err = h.reg.ParseSlots(capacity); err != nil {
		h.t.Fatal(err)
	}
	back, err := h.st.RegisterAgent(h.ctx, a, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	h.agents.mu.Lock()
	h.agents.epochs[agent] = back.Epoch
	h.agents.mu.Unlock()
}

// jobPicture is what the deadlock test watches of two jobs: each member's
// status and the agents its kernels sit on, and each agent's occupancy.
func (h *harness) jobPicture(members []domain.SessionID) string {
	h.t.Helper()
	var b strings.Builder
	for _, id := range members {
		sk := h.session(id)
		b.WriteString(string(id) + "=" + sk.Session.Status.String())
		for _, k := range sk.Kernels {
			b.WriteString("@" + string(k.Agent))
		}
		b.WriteString(" ")
	}
	agents, err := h.st.ListAgents(h.ctx, store.AgentFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, a := range agents {
		fmt.Fprintf(&b, "%s:%v/%d ", a.ID, h.reg.FormatSlots(a.Occupied), a.KernelCount)
	}
	return b.String()
}

// Issue 14's deadlock case over many rounds: two jobs of min 6 submitted
// interleaved on room for 10 one-cpu members. One gang is placed whole and
// runs; the other waits PENDING holding nothing — not for one round but
// for as long as the first runs, past its permit timeout — and the agents
// hold only the running gang's slots. When the first ends, the second's 6
// are placed in one round and start together.
func TestJobTwoGangsNoDeadlock(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		// 2 × 5 cpu: room for 10 members of 1 cpu; mem is not the limit.
		for _, a := range []domain.AgentID{"agent-0", "agent-1"} {
			h.resize(a, map[string]string{"cpu": "5", "mem": "16g"})
		}
		ja := h.newJob("a", 6, time.Minute, domain.FailureWait)
		jb := h.newJob("b", 6, time.Minute, domain.FailureWait)
		var as, bs []domain.SessionID
		for range 6 {
			as = append(as, h.member(ja, "exit:0"))
			bs = append(bs, h.member(jb, "exit:0"))
		}
		all := append(append([]domain.SessionID{}, as...), bs...)

		// allIn reports whether every member of ids is in st.
		allIn := func(ids []domain.SessionID, st domain.SessionStatus) bool {
			for _, id := range ids {
				if h.status(id) != st {
					return false
				}
			}
			return true
		}
		for i := 0; !allIn(as, domain.SessionRunning) && !allIn(bs, domain.SessionRunning); i++ {
			if i == 30 {
				t.Fatalf("neither gang runs after 30 steps: %s", h.jobPicture(all))
			}
			h.step()
		}
		run, wait, waitJob := as, bs, jb
		if allIn(bs, domain.SessionRunning) {
			run, wait, waitJob = bs, as, ja
		}
		// wantWaiting checks the waiting gang holds nothing and the agents
		// hold exactly the running gang's 6 cpu.
		wantWaiting := func() {
			t.Helper()
			for _, id := range wait {
				sk := h.session(id)
				if sk.Session.Status != domain.SessionPending || sk.Kernels[0].Agent != "" {
					t.Fatalf("waiting member %s is %v on %q: %s", id, sk.Session.Status, sk.Kernels[0].Agent, h.jobPicture(all))
				}
			}
			agents, err := h.st.ListAgents(h.ctx, store.AgentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			cpu, _ := h.reg.Lookup("cpu")
			var used domain.Quantity
			kernels := 0
			for _, a := range agents {
				used += a.Occupied.At(cpu)
				kernels += a.KernelCount
			}
			if want, _ := h.reg.ParseSlots(map[string]string{"cpu": "6"}); used != want.At(cpu) || kernels != 6 {
				t.Fatalf("agents hold %s cpu in %d kernels, want the running gang's 6: %s",
					h.reg.Format(cpu, used), kernels, h.jobPicture(all))
			}
		}
		wantWaiting()
		h.wantJob(waitJob, domain.JobAccepted)

		// Rounds go on, and time passes beyond the permit timeout: nothing
		// moves, so neither gang gives way to the other.
		before := h.jobPicture(all)
		for range 8 {
			h.advance(20 * time.Second)
			h.step()
			if got := h.jobPicture(all); got != before {
				t.Fatalf("the picture changed with nothing ended:\nbefore %s\n after %s", before, got)
			}
		}
		wantWaiting()
		h.wantJob(waitJob, domain.JobAccepted)
		for _, id := range wait {
			if n := h.count(id, "JobPermit:EXPIRED"); n != 0 {
				t.Fatalf("waiting member %s was reserved and released:\n%s", id, h.history(id))
			}
		}

		// The running gang ends; the waiting one is placed in one round.
		h.agents.exitKernels()
		for i := 0; !allIn(wait, domain.SessionRunning); i++ {
			if i == 30 {
				t.Fatalf("the second gang never ran: %s", h.jobPicture(all))
			}
			h.step()
			left := 0
			for _, id := range wait {
				if h.status(id) != domain.SessionPending {
					left++
				}
			}
			if left != 0 && left != len(wait) {
				t.Fatalf("%d of %d members of the second gang left PENDING in one round: %s", left, len(wait), h.jobPicture(all))
			}
		}
		for _, id := range run {
			h.wantStatus(id, domain.SessionTerminated)
		}
	})
}
