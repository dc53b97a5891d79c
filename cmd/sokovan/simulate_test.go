package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimulateBadWorkloadLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wl := filepath.Join(dir, "w.jsonl")
	lines := `{"submit_s":0,"user":"u","duration_s":5}
{"submit_s":1,"user":"u","duration_s":5,"resources":{"cpu":"many"}}
`
	if err := os.WriteFile(wl, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newCLI(t, nil).run("", "simulate", "--workload", wl, "--cluster", "agents=1,cpu=4,mem=8g")
	if r.code == 0 {
		t.Fatalf("exit 0 on a bad workload; stdout %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "line 2: field resources.cpu") {
		t.Errorf("stderr %q does not name line 2 and resources.cpu", r.stderr)
	}
}

func TestSimulateCompareWritesEveryVariant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, page := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	r := newCLI(t, nil).run("", "simulate", "--generate", "sessions=40,users=4,seed=2",
		"--cluster", "agents=2,cpu=64,mem=256g,cuda.shares=8", "--compare", "group.sequencer=fifo,lifo",
		"-o", out, "--html", page)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, v := range []string{"group.sequencer=fifo", "group.sequencer=lifo"} {
		if !strings.Contains(r.stdout, v) {
			t.Errorf("table lacks %s:\n%s", v, r.stdout)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Variants []struct {
			Name   string         `json:"name"`
			Status map[string]int `json:"status"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Variants) != 2 || rep.Variants[1].Name != "group.sequencer=lifo" {
		t.Fatalf("report variants %+v, want fifo then lifo", rep.Variants)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(html); !strings.Contains(s, "<svg") || strings.Contains(s, "<script") || strings.Contains(s, "http://") && !strings.Contains(s, "http://www.w3.org/2000/svg") {
		t.Error("the HTML report is not a self-contained page of inline SVG")
	}
}

// TestSimulateImportOnly: `simulate import` writes the trace as a
// workload without running it, with the time limits --limits gives, and
// the file runs with --workload.
func TestSimulateImportOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "openb.csv")
	rows := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
		"openb-pod-0000,12000,16384,1,500,V100M32,LS,Succeeded,0,1000,0\n" +
		"openb-pod-0001,8000,32768,0,0,,BE,Succeeded,150,270,150\n"
	if err := os.WriteFile(trace, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, nil)
	out := filepath.Join(dir, "w.jsonl")
	c.ok("", "simulate", "import", "openb:"+trace, "--limits", "factor:2", "-o", out)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"time_limit_s":2040`) || !strings.Contains(lines[1], `"time_limit_s":240`) {
		t.Fatalf("workload:\n%s\nwant two sessions with limits twice their run times (1000 s → 2040, 120 s → 240)", raw)
	}
	r := c.run("", "simulate", "--workload", out, "--cluster", "agents=1,cpu=16,mem=64g,cuda.shares=8")
	if r.code != 0 || !strings.Contains(r.stdout, "defaults") {
		t.Fatalf("running the imported workload: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := c.run("", "simulate", "import", "openb:"+trace, "--limits", "twice"); r.code == 0 || !strings.Contains(r.stderr, "--limits") {
		t.Errorf("a bad --limits: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestSimulateImportPhilly: `simulate import philly:FILE` reads Philly's
// cluster_job_log layout (the package's sample) and says what it dropped;
// a file that is not the layout is an error, exit non-zero.
func TestSimulateImportPhilly(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	sample := filepath.Join("..", "..", "internal", "simulate", "testdata", "philly_sample.json")
	r := c.run("", "simulate", "import", "philly:"+sample)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stdout, `"id":"application_1506638472019_0002"`) ||
		!strings.Contains(r.stderr, "imported 3 of 5 rows") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"jobid": "j1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := c.run("", "simulate", "import", "philly:"+bad); r.code == 0 || !strings.Contains(r.stderr, "JSON array") {
		t.Errorf("a file that is no job list: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestSimulateSaysWhySessionsWereRejected: a workload the cluster cannot
// take at all (Philly's jobs ask cuda.shares of a cluster offering
// cuda.device) is reported as rejected, with the first refusal's reason,
// not as sessions that ended with no wait.
func TestSimulateSaysWhySessionsWereRejected(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	sample := filepath.Join("..", "..", "internal", "simulate", "testdata", "philly_sample.json")
	r := c.run("", "simulate", "--import", "philly:"+sample, "--cluster", "agents=2,cpu=32,mem=128g,cuda.device=8")
	if r.code != 0 || !strings.Contains(r.stdout, "REJECTED defaults: 3 session(s) refused at submit, the first because: ") ||
		!strings.Contains(r.stdout, "cuda.shares") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The row's last five values: ended, rejected, unfinished, preempted,
	// work lost (the header's names are not one word each).
	row := strings.Fields(strings.Split(r.stdout, "\n")[1])
	at := func(col string) string {
		return row[len(row)-5+map[string]int{"ended": 0, "rejected": 1}[col]]
	}
	if at("ended") != "0" || at("rejected") != "3" {
		t.Errorf("ended %q, rejected %q; want 0 and 3:\n%s", at("ended"), at("rejected"), r.stdout)
	}
}
