package simulate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

func workload(t *testing.T, jsonl string) simulate.Workload {
	t.Helper()
	w, err := simulate.ReadWorkload(strings.NewReader(jsonl), domain.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func cluster(t *testing.T, spec string) simulate.Cluster {
	t.Helper()
	cl, err := simulate.ParseCluster(spec, domain.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func setting(t *testing.T, s string) simulate.Setting {
	t.Helper()
	x, err := simulate.ParseSetting(s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// run simulates with a small utilisation series; the small cases read
// each session's wait back from the CDF's distinct points.
func run(t *testing.T, w simulate.Workload, cl simulate.Cluster, settings ...simulate.Setting) simulate.Variant {
	t.Helper()
	v, err := simulate.Run(context.Background(), w, cl, settings, simulate.Options{TempDir: t.TempDir(), Samples: 10})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Three sessions that each need the whole agent: a runs 0–100 s; b (at
// 10 s) and c (at 20 s) wait for it.
const threeWhole = `{"id":"a","submit_s":0,"user":"u1","resources":{"cpu":"4","mem":"8g"},"duration_s":100}
{"id":"b","submit_s":10,"user":"u2","resources":{"cpu":"4","mem":"8g"},"duration_s":100}
{"id":"c","submit_s":20,"user":"u3","resources":{"cpu":"4","mem":"8g"},"duration_s":50}
`

func TestSimulateExactWaits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		sequencer string
		// waits sorted, as the CDF lists them.
		wantWaits []float64
		makespan  float64
	}{
		// FIFO: b starts at 100 (waited 90), c at 200 (waited 180).
		{"fifo", "fifo", []float64{0, 90, 180}, 250},
		// LIFO: at 100 c is the newest, starts (waited 80); b at 150
		// (waited 140).
		{"lifo", "lifo", []float64{0, 80, 140}, 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := run(t, workload(t, threeWhole), cluster(t, "agents=1,cpu=4,mem=16g"), setting(t, "group.sequencer="+tt.sequencer))
			all := v.Classes[0]
			if all.Started != 3 {
				t.Fatalf("started %d of 3; status %v", all.Started, v.Status)
			}
			var got []float64
			seen := map[float64]bool{}
			for _, p := range all.CDF {
				if !seen[p[0]] {
					seen[p[0]] = true
					got = append(got, p[0])
				}
			}
			if diff := cmp.Diff(tt.wantWaits, got); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if v.MakespanS != tt.makespan {
				t.Errorf("makespan %v, want %v", v.MakespanS, tt.makespan)
			}
			if diff := cmp.Diff(map[string]int{"TERMINATED": 3}, v.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSimulateDeterministicReport(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	cl := cluster(t, "agents=4,cpu=32,mem=128g,cuda.shares=8")
	g, err := simulate.ParseGenSpec("sessions=150,users=6,seed=7")
	if err != nil {
		t.Fatal(err)
	}
	w, err := simulate.Generate(g, cl, reg)
	if err != nil {
		t.Fatal(err)
	}
	once := func() []byte {
		vs, err := simulate.Compare(context.Background(), w, cl, [][]simulate.Setting{{setting(t, "group.sequencer=drf")}},
			simulate.Options{Samples: 50})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := (simulate.Report{Variants: vs}).WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	first, second := once(), once()
	if !bytes.Equal(first, second) {
		t.Fatalf("two runs of the same inputs differ:\n%s", cmp.Diff(string(first), string(second)))
	}
}

func TestSimulateTimeLimitAndRefusals(t *testing.T) {
	t.Parallel()
	w := workload(t, `{"id":"long","submit_s":0,"user":"u1","resources":{"cpu":"1"},"duration_s":100,"time_limit_s":30}
{"id":"chat","submit_s":0,"user":"u2","type":"interactive","resources":{"cpu":"1"},"duration_s":10}
{"id":"after","submit_s":1,"user":"u2","resources":{"cpu":"1"},"duration_s":10,"depends_on":["chat"]}
{"id":"fails","submit_s":2,"user":"u3","resources":{"cpu":"1"},"duration_s":10,"exit_code":3}
{"id":"next","submit_s":3,"user":"u3","resources":{"cpu":"1"},"duration_s":10,"depends_on":["fails"]}
`)
	v := run(t, w, cluster(t, "agents=1,cpu=8,mem=16g"), setting(t, "group.allowed_types=batch"))
	// long: stopped by its limit at 30 s; chat: refused (the group runs
	// batch only), so after is refused too (its dependency does not
	// exist); fails ends TERMINATED with a failure, so next is cancelled.
	want := map[string]int{"TERMINATED": 2, "REJECTED": 2, "CANCELLED": 1}
	if diff := cmp.Diff(want, v.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if v.TimeLimited != 1 {
		t.Errorf("time limited %d, want 1", v.TimeLimited)
	}
	// long holds 30 s, fails 10 s: the run spans 0–30 s.
	if v.MakespanS != 30 {
		t.Errorf("makespan %v, want 30 (long stopped at its limit)", v.MakespanS)
	}
}

// The owner's policies refuse at submission as the API's admission does:
// a session asking in all for more than max_slots could never run, and
// max_pending_sessions counts every PENDING session the store holds,
// those submitted at the same instant included.
func TestSimulatePolicyRefusals(t *testing.T) {
	t.Parallel()
	// big: 2 kernels × 4 cpu = 8 cpu in all, over the max of 6 (each
	// kernel alone is within it). At 10 s a holds the agent, so b waits
	// PENDING and c, the same instant's second session of u2, finds u2's
	// one place taken.
	w := workload(t, `{"id":"big","submit_s":0,"user":"u1","resources":{"cpu":"4","mem":"1g"},"cluster_size":2,"duration_s":10}
{"id":"a","submit_s":0,"user":"u2","resources":{"cpu":"6","mem":"1g"},"duration_s":100}
{"id":"b","submit_s":10,"user":"u2","resources":{"cpu":"6","mem":"1g"},"duration_s":10}
{"id":"c","submit_s":10,"user":"u2","resources":{"cpu":"6","mem":"1g"},"duration_s":10}
`)
	v := run(t, w, cluster(t, "agents=1,cpu=6,mem=16g"), setting(t, "user.max_slots.cpu=6"),
		setting(t, "user.max_pending_sessions=1"))
	want := map[string]int{"TERMINATED": 2, "REJECTED": 2}
	if diff := cmp.Diff(want, v.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// A high-priority session preempts the low one holding the only agent: lo
// runs 0–30 s and is preempted (30 s of work lost), hi runs 30–40 s, and
// lo's new attempt runs its whole 100 s again, 40–140 s. Without
// preemption hi waits for lo to end at 100 s.
func TestSimulatePreemption(t *testing.T) {
	t.Parallel()
	w := workload(t, `{"id":"lo","submit_s":0,"user":"u1","resources":{"cpu":"4","mem":"8g"},"duration_s":100,"priority":0,"requeue":true}
{"id":"hi","submit_s":30,"user":"u2","resources":{"cpu":"4","mem":"8g"},"duration_s":10,"priority":50}
`)
	cl := cluster(t, "agents=1,cpu=4,mem=8g")
	v := run(t, w, cl, setting(t, "group.preemption=true"))
	if v.Preempted != 1 || v.WorkLostS != 30 {
		t.Errorf("preempted %d losing %gs, want 1 losing 30s", v.Preempted, v.WorkLostS)
	}
	if v.MakespanS != 140 || v.Status["TERMINATED"] != 2 {
		t.Errorf("makespan %gs, status %v; want 140s and both TERMINATED", v.MakespanS, v.Status)
	}
	if len(v.Priorities) != 2 || v.Priorities[0].Name != "priority 50" || v.Priorities[0].Wait.Max != 0 {
		t.Errorf("priorities %+v, want priority 50 first, started at once", v.Priorities)
	}
	off := run(t, w, cl)
	if off.Preempted != 0 || off.MakespanS != 110 {
		t.Errorf("without preemption: preempted %d, makespan %gs; want 0 and 110s", off.Preempted, off.MakespanS)
	}
}

// TestSimulateStoppedEarlyKeepsWhatRan is issue 29's timeout that wrote
// nothing: a run whose context ends (a timeout, an interrupt) reports
// what had happened, marked partial, with every session counted once:
// ended, still live (UNFINISHED) or not yet due (NOT_SUBMITTED). Compare
// runs no variant after it.
func TestSimulateStoppedEarlyKeepsWhatRan(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	cl := cluster(t, "agents=20,cpu=64,mem=256g,cuda.shares=8")
	g, err := simulate.ParseGenSpec("sessions=20000,users=20,seed=3")
	if err != nil {
		t.Fatal(err)
	}
	w, err := simulate.Generate(g, cl, reg)
	if err != nil {
		t.Fatal(err)
	}
	// Far shorter than the run: 20,000 sessions take tens of seconds.
	ctx, cancel := context.WithTimeoutCause(context.Background(), 500*time.Millisecond, errors.New("test timeout"))
	defer cancel()
	vs, err := simulate.Compare(ctx, w, cl, [][]simulate.Setting{{setting(t, "group.sequencer=fifo")},
		{setting(t, "group.sequencer=drf")}}, simulate.Options{TempDir: t.TempDir(), Samples: 10})
	if err != nil {
		t.Fatalf("a stopped run failed instead of reporting: %v", err)
	}
	if len(vs) != 1 {
		t.Fatalf("%d variants reported, want the one that ran", len(vs))
	}
	v := vs[0]
	if !strings.Contains(v.Partial, "test timeout") {
		t.Fatalf("partial %q, want it to say why the run stopped", v.Partial)
	}
	total := 0
	for _, n := range v.Status {
		total += n
	}
	if total != len(w.Sessions) || v.Status["NOT_SUBMITTED"] == 0 {
		t.Fatalf("statuses %v add up to %d of %d sessions, with some not yet submitted", v.Status, total, len(w.Sessions))
	}
}

// TestSimulateSessionResults: each session's own result, which a user
// needs to study one pod's wait: when it was submitted, started and
// ended, on which agents, and for one never started by the end of the run
// its wait so far, marked censored.
func TestSimulateSessionResults(t *testing.T) {
	t.Parallel()
	// FIFO on one whole agent until 150 s: a runs 0–100 s, b starts at
	// 100 and still runs, c (submitted at 20 s) has not started.
	v, err := simulate.Run(context.Background(), workload(t, threeWhole), cluster(t, "agents=1,cpu=4,mem=16g"),
		[]simulate.Setting{setting(t, "group.sequencer=fifo")},
		simulate.Options{TempDir: t.TempDir(), Samples: 10, Horizon: 150 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := func(x float64) *float64 { return &x }
	agent := v.Sessions[0].Agents
	if len(agent) != 1 {
		t.Fatalf("a ran on %v, want one agent", agent)
	}
	want := []simulate.SessionResult{
		{Variant: v.Name, ID: "a", User: "u1", SubmitS: 0, StartS: f(0), EndS: f(100), WaitS: f(0), Status: "TERMINATED",
			Agents: agent, Reason: v.Sessions[0].Reason},
		{Variant: v.Name, ID: "b", User: "u2", SubmitS: 10, StartS: f(100), WaitS: f(90), Status: "UNFINISHED", Agents: agent},
		{Variant: v.Name, ID: "c", User: "u3", SubmitS: 20, WaitS: f(80), Censored: true, Status: "UNFINISHED"},
	}
	if diff := cmp.Diff(want, v.Sessions); diff != "" {
		t.Fatalf("session results (-want +got):\n%s", diff)
	}
	var csvOut bytes.Buffer
	if err := (simulate.Report{Variants: []simulate.Variant{v}}).WriteSessionsCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csvOut.String(), ",c,u3,20,,,80,true,UNFINISHED,,\n") {
		t.Errorf("CSV lacks c's censored row:\n%s", csvOut.String())
	}
}

// TestSimulateSizeClasses: the classes follow --classes, and the biggest
// sessions are those asking the most GPUs in all, one kernel or many.
func TestSimulateSizeClasses(t *testing.T) {
	t.Parallel()
	if _, err := simulate.ParseClasses("0,4,2"); err == nil {
		t.Error("descending bounds accepted")
	}
	bounds, err := simulate.ParseClasses("0,2")
	if err != nil {
		t.Fatal(err)
	}
	const wl = `{"id":"cpu","submit_s":0,"user":"u1","resources":{"cpu":"1","mem":"1g"},"duration_s":10}
{"id":"one","submit_s":0,"user":"u1","resources":{"cpu":"1","mem":"1g","cuda.shares":"1"},"duration_s":10}
{"id":"eight","submit_s":0,"user":"u2","resources":{"cpu":"1","mem":"1g","cuda.shares":"8"},"duration_s":10}
{"id":"gang","submit_s":0,"user":"u3","resources":{"cpu":"1","mem":"1g","cuda.shares":"2"},"cluster_size":2,"cluster_mode":"multi-node","duration_s":10}
`
	v, err := simulate.Run(context.Background(), workload(t, wl), cluster(t, "agents=2,cpu=16,mem=64g,cuda.shares=8"), nil,
		simulate.Options{TempDir: t.TempDir(), Samples: 10, Classes: bounds})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range v.Classes {
		names = append(names, fmt.Sprintf("%s:%d", c.Name, c.Sessions))
	}
	if diff := cmp.Diff([]string{"all:4", "cpu-only:1", "<=2 GPUs:1", ">2 GPUs:2"}, names); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
	if v.Biggest == nil || v.Biggest.GPUs != 8 || v.Biggest.Sessions != 1 || v.Biggest.Started != 1 {
		t.Errorf("biggest %+v, want the one 8-GPU single-kernel session", v.Biggest)
	}
}

// Two agents of 4 GPUs each run a 3-GPU session (a until 1000 s, b until
// 2000 s), leaving one GPU free on each; c asks for 2 from 10 s and
// waits for a's end. While it waits, both free GPUs are on agents it does
// not fit: fragmentation 1. With d (1 GPU) queued behind c under
// head_of_line=block, the same free GPUs are ones d could use: 0.
func TestFragmentation(t *testing.T) {
	t.Parallel()
	const base = `{"id":"a","submit_s":0,"user":"u1","resources":{"cpu":"1","mem":"1g","cuda.shares":"3"},"duration_s":1000}
{"id":"b","submit_s":0,"user":"u1","resources":{"cpu":"1","mem":"1g","cuda.shares":"3"},"duration_s":2000}
{"id":"c","submit_s":10,"user":"u2","resources":{"cpu":"1","mem":"1g","cuda.shares":"2"},"duration_s":100}
`
	const d = `{"id":"d","submit_s":20,"user":"u3","resources":{"cpu":"1","mem":"1g","cuda.shares":"1"},"duration_s":100}
`
	cl := cluster(t, "agents=2,cpu=8,mem=32g,cuda.shares=4")
	// Ten samples over 2,000 s: the middles of 200-s intervals at 100,
	// 300, …, 1900 s; c waits over the first five.
	one, zero := 1.0, 0.0
	for _, tt := range []struct {
		name     string
		jsonl    string
		want     *float64
		settings []simulate.Setting
	}{
		{"nothing fits the free GPUs", base, &one, nil},
		{"a waiting session fits them", base + d, &zero, []simulate.Setting{setting(t, "group.head_of_line=block")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := run(t, workload(t, tt.jsonl), cl, tt.settings...)
			f := v.Fragmentation
			if f == nil {
				t.Fatal("no fragmentation on a GPU cluster")
			}
			want := make([]*float64, 10)
			for i := range 5 {
				want[i] = tt.want
			}
			if diff := cmp.Diff(want, f.Series); diff != "" || f.Mean != *tt.want || f.Instants != 5 || f.IntervalS != 200 {
				t.Errorf("mean %v over %d instants every %v s, series (-want +got):\n%s", f.Mean, f.Instants, f.IntervalS, diff)
			}
		})
	}
	// Weighted by the workload (two 3-GPU sessions, one 2-GPU): while c
	// waits nothing fits the free GPUs; at 1100 s agent 1 has 2 free
	// (only the 2-GPU third fits) and agent 2 has 1: (2·2/3 + 1)/3; then
	// agent 1's 4 free GPUs fit everything and agent 2's 1 nothing: 1/5.
	t.Run("expected over the workload", func(t *testing.T) {
		t.Parallel()
		f := run(t, workload(t, base), cl).Fragmentation
		p := func(x float64) *float64 { return &x }
		want := []*float64{p(1), p(1), p(1), p(1), p(1), p(0.7778), p(0.2), p(0.2), p(0.2), p(0.2)}
		if diff := cmp.Diff(want, f.ExpectedSeries); diff != "" || f.ExpectedMean != 0.6578 {
			t.Errorf("expected mean %v, series (-want +got):\n%s", f.ExpectedMean, diff)
		}
	})
	t.Run("no GPUs, no figure", func(t *testing.T) {
		t.Parallel()
		v := run(t, workload(t, threeWhole), cluster(t, "agents=1,cpu=4,mem=8g"))
		if v.Fragmentation != nil {
			t.Errorf("fragmentation %+v on a cluster without GPUs", v.Fragmentation)
		}
	})
}
