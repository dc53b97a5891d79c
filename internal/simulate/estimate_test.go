package simulate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

func TestEstimate(t *testing.T) {
	reg := domain.DefaultRegistry()
	now := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	slots := func(pairs ...string) domain.Vec {
		t.Helper()
		m := map[string]string{}
		for i := 0; i < len(pairs); i += 2 {
			m[pairs[i]] = pairs[i+1]
		}
		v, err := reg.ParseSlots(m)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	session := func(id string, created time.Time, req domain.Vec, agent domain.AgentID) simulate.LiveSession {
		s := domain.Session{ID: domain.SessionID(id), Name: id, Owner: domain.Owner{User: "alice", Project: "p", Domain: "default"},
			Type: domain.TypeBatch, Architecture: "x86_64", ClusterMode: domain.SingleNode, ClusterSize: 1,
			Priority: 10, Requested: req, CreatedAt: created}
		k := domain.Kernel{ID: domain.KernelID(id + "-k0"), SessionID: s.ID, ClusterRole: domain.RoleMain,
			Architecture: "x86_64", Requested: req.Clone(), Agent: agent}
		return simulate.LiveSession{Session: s, Kernels: []domain.Kernel{k}}
	}
	group := estimateGroup()
	agent := domain.Agent{ID: "a1", ResourceGroup: "g", Architecture: "x86_64", Status: domain.AgentAlive, Schedulable: true,
		Capacity: slots("cpu", "4", "mem", "16g")}
	ends := now.Add(90 * time.Minute)

	running := session("run", now.Add(-time.Hour), slots("cpu", "4", "mem", "8g"), "a1")
	running.End = ends
	next := session("next", now.Add(-time.Minute), slots("cpu", "2", "mem", "4g"), "")
	next.Run = time.Hour
	huge := session("huge", now.Add(-2*time.Minute), slots("cpu", "8", "mem", "4g"), "")
	huge.Run = time.Hour

	got, err := simulate.Estimate(context.Background(), simulate.Live{Now: now, Slots: reg, Group: group,
		Agents: []domain.Agent{agent}, Running: []simulate.LiveSession{running},
		Pending: []simulate.LiveSession{huge, next}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The one agent is full until the running session ends at 15:30; the
	// next session starts then, within the store's microseconds.
	if at, ok := got["next"]; !ok || at.Sub(ends).Abs() > time.Second {
		t.Errorf("estimate of next: %v (present %v), want about %v", at, ok, ends)
	}
	// Larger than every agent: it can never start, so no estimate.
	if at, ok := got["huge"]; ok {
		t.Errorf("estimate of huge: %v, want none", at)
	}
}

// TestEstimateWithDevices: running kernels keep their device grants in the
// replay, so an agent that hands out devices replays at all, and a session
// waiting for a device starts when the running one frees it.
func TestEstimateWithDevices(t *testing.T) {
	reg := domain.DefaultRegistry()
	now := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	devs, err := domain.ParseFakeDevices("cuda:1")
	if err != nil {
		t.Fatal(err)
	}
	capacity, _ := reg.ParseSlots(map[string]string{"cpu": "8", "mem": "16g", "cuda.device": "1"})
	req, _ := reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g", "cuda.device": "1"})
	group := estimateGroup()
	agent := domain.Agent{ID: "a1", ResourceGroup: "g", Architecture: "x86_64", Status: domain.AgentAlive, Schedulable: true,
		Capacity: capacity, Devices: devs}
	session := func(id string, created time.Time) simulate.LiveSession {
		s := domain.Session{ID: domain.SessionID(id), Name: id, Owner: domain.Owner{User: "alice", Project: "p", Domain: "default"},
			Type: domain.TypeBatch, Architecture: "x86_64", ClusterMode: domain.SingleNode, ClusterSize: 1,
			Requested: req, CreatedAt: created}
		k := domain.Kernel{ID: domain.KernelID(id + "-k0"), SessionID: s.ID, ClusterRole: domain.RoleMain,
			Architecture: "x86_64", Requested: req.Clone()}
		return simulate.LiveSession{Session: s, Kernels: []domain.Kernel{k}}
	}
	ends := now.Add(30 * time.Minute)
	running := session("run", now.Add(-time.Hour))
	running.Kernels[0].Agent = "a1"
	running.Kernels[0].Devices = []domain.DeviceGrant{{Device: "cuda:0", Index: 0, Slot: "cuda.device", Share: 1000, Memory: 16 << 30}}
	running.End = ends
	next := session("next", now.Add(-time.Minute))
	next.Run = time.Hour
	got, err := simulate.Estimate(context.Background(), simulate.Live{Now: now, Slots: reg, Group: group,
		Agents: []domain.Agent{agent}, Running: []simulate.LiveSession{running}, Pending: []simulate.LiveSession{next}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := got["next"]; !ok || at.Sub(ends).Abs() > time.Second {
		t.Errorf("estimate of next: %v (present %v), want about %v", at, ok, ends)
	}
}

// TestExpectedRunReadsTimeLimits: a session with a time limit is expected
// to run for it, counted from when it became RUNNING; one without goes by
// its type.
func TestExpectedRunReadsTimeLimits(t *testing.T) {
	now := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	started := now.Add(-2 * time.Minute)
	for _, c := range []struct {
		name    string
		s       domain.Session
		run     time.Duration
		wantEnd time.Time
	}{
		{"running with a limit ends at start+limit",
			domain.Session{Type: domain.TypeBatch, Status: domain.SessionRunning, StatusChangedAt: started, TimeLimit: 10 * time.Minute},
			10 * time.Minute, started.Add(10 * time.Minute)},
		{"placed with a limit ends a limit from now",
			domain.Session{Type: domain.TypeBatch, Status: domain.SessionPreparing, StatusChangedAt: started, TimeLimit: 10 * time.Minute},
			10 * time.Minute, now.Add(10 * time.Minute)},
		{"running without a limit goes by its type",
			domain.Session{Type: domain.TypeInteractive, Status: domain.SessionRunning, StatusChangedAt: started},
			8 * time.Hour, started.Add(8 * time.Hour)},
		{"a type with no typical run gets an hour",
			domain.Session{Type: "unknown", Status: domain.SessionRunning, StatusChangedAt: started},
			time.Hour, started.Add(time.Hour)},
	} {
		if got := simulate.ExpectedRun(c.s); got != c.run {
			t.Errorf("%s: run %v, want %v", c.name, got, c.run)
		}
		if got := simulate.ExpectedEnd(c.s, now); !got.Equal(c.wantEnd) {
			t.Errorf("%s: end %v, want %v", c.name, got, c.wantEnd)
		}
	}
}

// TestEstimateWithJobMembers is issue 32's vanishing estimates: a running
// session that belongs to a job made the whole replay fail (its job was
// not in the replay's store), so no pending session of the group got an
// estimate. The jobs come along now, and their gangs are replayed too.
func TestEstimateWithJobMembers(t *testing.T) {
	reg := domain.DefaultRegistry()
	now := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	req, err := reg.ParseSlots(map[string]string{"cpu": "2", "mem": "4g"})
	if err != nil {
		t.Fatal(err)
	}
	capacity, _ := reg.ParseSlots(map[string]string{"cpu": "4", "mem": "16g"})
	session := func(id string, created time.Time, job domain.JobID, agent domain.AgentID) simulate.LiveSession {
		s := domain.Session{ID: domain.SessionID(id), Name: id, Owner: domain.Owner{User: "alice", Project: "p", Domain: "default"},
			Type: domain.TypeBatch, Architecture: "x86_64", ClusterMode: domain.SingleNode, ClusterSize: 1,
			Priority: 10, Requested: req, CreatedAt: created, Job: job}
		k := domain.Kernel{ID: domain.KernelID(id + "-k0"), SessionID: s.ID, ClusterRole: domain.RoleMain,
			Architecture: "x86_64", Requested: req.Clone(), Agent: agent}
		return simulate.LiveSession{Session: s, Kernels: []domain.Kernel{k}}
	}
	group := estimateGroup()
	agent := estimateAgent(capacity)
	job := domain.Job{ID: "j1", Name: "spark", Owner: domain.Owner{User: "alice", Project: "p", Domain: "default"},
		MinAvailable: 2, PermitTimeout: time.Minute, FailurePolicy: domain.FailureWait, State: domain.JobRunning,
		StateChangedAt: now.Add(-time.Hour), CreatedAt: now.Add(-time.Hour)}
	ends := now.Add(30 * time.Minute)
	m1, m2 := session("m1", now.Add(-time.Hour), "j1", "a1"), session("m2", now.Add(-time.Hour), "j1", "a1")
	m1.End, m2.End = ends, ends
	next := session("next", now.Add(-time.Minute), "", "")
	next.Run = time.Hour

	got, err := simulate.Estimate(context.Background(), simulate.Live{Now: now, Slots: reg, Group: group,
		Agents: []domain.Agent{agent}, Jobs: []domain.Job{job}, Running: []simulate.LiveSession{m1, m2},
		Pending: []simulate.LiveSession{next}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := got["next"]; !ok || at.Sub(ends).Abs() > time.Second {
		t.Errorf("estimate of next behind a running job: %v (present %v), want about %v", at, ok, ends)
	}
}

// A session that starts at once has an estimate, now, even when the
// estimate starts from a time finer than the store's microseconds.
func TestEstimateStartsAtOnce(t *testing.T) {
	reg := domain.DefaultRegistry()
	now := time.Date(2026, 3, 2, 14, 0, 0, 123456789, time.UTC)
	req, err := reg.ParseSlots(map[string]string{"cpu": "2", "mem": "1g"})
	if err != nil {
		t.Fatal(err)
	}
	capacity, err := reg.ParseSlots(map[string]string{"cpu": "4", "mem": "16g"})
	if err != nil {
		t.Fatal(err)
	}
	s := domain.Session{ID: "s1", Name: "s1", Owner: domain.Owner{User: "alice", Project: "p", Domain: "default"},
		Type: domain.TypeBatch, Architecture: "x86_64", ClusterMode: domain.SingleNode, ClusterSize: 1,
		Priority: 10, Requested: req, CreatedAt: now.Truncate(time.Microsecond)}
	k := domain.Kernel{ID: "s1-k0", SessionID: s.ID, ClusterRole: domain.RoleMain, Architecture: "x86_64", Requested: req.Clone()}
	group := estimateGroup()
	agent := estimateAgent(capacity)
	got, err := simulate.Estimate(context.Background(), simulate.Live{Now: now, Slots: reg, Group: group,
		Agents: []domain.Agent{agent}, Pending: []simulate.LiveSession{{Session: s, Kernels: []domain.Kernel{k}, Run: time.Hour}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := got["s1"]; !ok || at.Sub(now).Abs() > time.Second {
		t.Errorf("estimate of a session that fits now: %v (present %v), want about %v", at, ok, now)
	}
}

// An element whose array Live does not carry (an uncapped one) made the
// whole replay fail (the element named an array the replay's store
// lacks), so no session of the group had an estimate. It is replayed as
// a session of its own now.
func TestEstimateWithArrayElements(t *testing.T) {
	reg := domain.DefaultRegistry()
	now := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	req, err := reg.ParseSlots(map[string]string{"cpu": "2", "mem": "4g"})
	if err != nil {
		t.Fatal(err)
	}
	capacity, _ := reg.ParseSlots(map[string]string{"cpu": "4", "mem": "16g"})
	element := func(index int, agent domain.AgentID) simulate.LiveSession {
		return arrayElement("a1", index, req, now.Add(-time.Hour), agent)
	}
	group := estimateGroup()
	agent := estimateAgent(capacity)
	running, pending := element(0, "a1"), element(1, "")
	running.End, pending.Run = now.Add(30*time.Minute), time.Hour
	got, err := simulate.Estimate(context.Background(), simulate.Live{Now: now, Slots: reg, Group: group,
		Agents: []domain.Agent{agent}, Running: []simulate.LiveSession{running}, Pending: []simulate.LiveSession{pending}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := got["e1"]; !ok || at.Sub(now).Abs() > time.Second {
		t.Errorf("estimate of a pending element beside a running one: %v (present %v), want about %v", at, ok, now)
	}
}

// TestEstimateHoldsArrayCap: the replay holds an array's cap (%N) as the
// scheduler does, so an element past it is estimated to start when an
// element before it ends, not at once beside them. Each element fits on
// the empty agent; only the cap of 2 holds elements 2 and 3 back.
func TestEstimateHoldsArrayCap(t *testing.T) {
	reg := domain.DefaultRegistry()
	now := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	req, err := reg.ParseSlots(map[string]string{"cpu": "1", "mem": "1g"})
	if err != nil {
		t.Fatal(err)
	}
	capacity, _ := reg.ParseSlots(map[string]string{"cpu": "16", "mem": "64g"})
	owner := domain.Owner{User: "alice", Project: "p", Domain: "default"}
	arr := domain.Array{ID: "arr1", Name: "sweep", Owner: owner, Spec: "0-3%2", Count: 4, MaxRunning: 2,
		CreatedAt: now.Add(-time.Hour)}
	element := func(index int, agent domain.AgentID) simulate.LiveSession {
		return arrayElement(arr.ID, index, req, now.Add(-time.Hour), agent)
	}
	group := estimateGroup()
	agent := estimateAgent(capacity)

	t.Run("all pending", func(t *testing.T) {
		es := []simulate.LiveSession{element(0, ""), element(1, ""), element(2, ""), element(3, "")}
		es[0].Run, es[1].Run, es[2].Run, es[3].Run = 30*time.Minute, 45*time.Minute, time.Hour, time.Hour
		got, err := simulate.Estimate(context.Background(), simulate.Live{Now: now, Slots: reg, Group: group,
			Agents: []domain.Agent{agent}, Pending: es, Arrays: []domain.Array{arr}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		// 0 and 1 start now; 2 when 0 ends, 3 when 1 ends.
		for id, want := range map[domain.SessionID]time.Time{"e0": now, "e1": now,
			"e2": now.Add(30 * time.Minute), "e3": now.Add(45 * time.Minute)} {
			if at, ok := got[id]; !ok || at.Sub(want).Abs() > time.Second {
				t.Errorf("estimate of %s: %v (present %v), want about %v", id, at, ok, want)
			}
		}
	})
	t.Run("one running", func(t *testing.T) {
		running := element(0, "a1")
		running.End = now.Add(20 * time.Minute)
		es := []simulate.LiveSession{element(1, ""), element(2, ""), element(3, "")}
		es[0].Run, es[1].Run, es[2].Run = 50*time.Minute, time.Hour, time.Hour
		got, err := simulate.Estimate(context.Background(), simulate.Live{Now: now, Slots: reg, Group: group,
			Agents: []domain.Agent{agent}, Running: []simulate.LiveSession{running}, Pending: es,
			Arrays: []domain.Array{arr}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The running element takes one of the two places: 1 starts now,
		// 2 when 0 ends at 14:20, 3 when 1 ends at 14:50.
		for id, want := range map[domain.SessionID]time.Time{"e1": now,
			"e2": now.Add(20 * time.Minute), "e3": now.Add(50 * time.Minute)} {
			if at, ok := got[id]; !ok || at.Sub(want).Abs() > time.Second {
				t.Errorf("estimate of %s: %v (present %v), want about %v", id, at, ok, want)
			}
		}
	})
}

// estimateGroup is the FIFO group every replay here runs in.
func estimateGroup() domain.ResourceGroup {
	return domain.ResourceGroup{Name: "g", State: domain.GroupActive, Sequencer: "fifo", Selector: "concentrated",
		HeadOfLine: domain.HOLSkip, MaxRetries: 3, Timeouts: domain.DefaultTimeouts()}
}

// estimateAgent is the group's one live agent, of capacity.
func estimateAgent(capacity domain.Vec) domain.Agent {
	return domain.Agent{ID: "a1", ResourceGroup: "g", Architecture: "x86_64", Status: domain.AgentAlive, Schedulable: true,
		Capacity: capacity}
}

// arrayElement is element index of alice's array "sweep" (id array), one
// kernel asking req, created at created, on agent when it runs.
func arrayElement(array domain.ArrayID, index int, req domain.Vec, created time.Time, agent domain.AgentID) simulate.LiveSession {
	id := domain.SessionID(fmt.Sprintf("e%d", index))
	s := domain.Session{ID: id, Name: domain.ArrayElementName("sweep", index), Owner: domain.Owner{User: "alice", Project: "p", Domain: "default"},
		Type: domain.TypeBatch, Architecture: "x86_64", ClusterMode: domain.SingleNode, ClusterSize: 1,
		Priority: 10, Requested: req, CreatedAt: created, Array: array, ArrayIndex: index}
	k := domain.Kernel{ID: domain.KernelID(string(id) + "-k0"), SessionID: s.ID, ClusterRole: domain.RoleMain,
		Architecture: "x86_64", Requested: req.Clone(), Agent: agent}
	return simulate.LiveSession{Session: s, Kernels: []domain.Kernel{k}}
}
