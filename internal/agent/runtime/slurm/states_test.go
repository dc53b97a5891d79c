package slurm

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/slurm-states.md from RenderStates")

func TestStatesDocIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "docs", "slurm-states.md")
	got := RenderStates()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || string(want) != got {
		t.Fatalf("docs/slurm-states.md is stale; run go test ./internal/agent/runtime/slurm/ -run TestStatesDocIsCurrent -update (%v)", err)
	}
}

func TestRule(t *testing.T) {
	cases := []struct {
		state string
		want  Phase
	}{
		{"PD", Queued}, {"PENDING", Queued}, {"S", Queued}, {"SUSPENDED", Queued}, {"R", Running}, {"CG", Running},
		// A stopped job (scancel --signal=STOP) is paused, as a suspended
		// one is, and keeps its allocation: not an end.
		{"ST", Queued}, {"STOPPED", Queued},
		{"CD", Ended}, {"F", Ended}, {"PR", Ended}, {"PREEMPTED", Ended}, {"NEW_STATE", Ended}, {"", Ended},
	}
	for _, c := range cases {
		if got := Rule(c.state).Phase; got != c.want {
			t.Errorf("Rule(%q) = %v, want %v", c.state, got, c.want)
		}
	}
	if Rule("PR").Message != "preempted by SLURM" {
		t.Errorf("PR's message = %q", Rule("PR").Message)
	}
}

// An end SLURM imposed is never a success; a job that completed, or a
// state the table does not know, is judged by its code.
func TestRuleFailure(t *testing.T) {
	cases := []struct {
		state string
		want  bool
	}{
		{"PR", true}, {"PREEMPTED", true}, {"TO", true}, {"TIMEOUT", true}, {"NF", true}, {"BF", true},
		{"DL", true}, {"OOM", true}, {"CA", true}, {"F", true},
		{"CD", false}, {"COMPLETED", false}, {"SE", false}, {"NEW_STATE", false},
	}
	for _, c := range cases {
		if got := Rule(c.state).Failure; got != c.want {
			t.Errorf("Rule(%q).Failure = %v, want %v", c.state, got, c.want)
		}
	}
	for _, r := range States {
		if r.Failure && r.Phase != Ended {
			t.Errorf("%s is a failure but not an end", r.State)
		}
	}
}

func TestParseSqueue(t *testing.T) {
	// exit_code is the raw wait status: 1024 is exit 4, 15 is SIGTERM.
	out := "10|FAILED|NonZeroExitCode|1024|sokovan-a\n11|PENDING|PartitionConfig|0|sokovan-b\n12|CANCELLED|None|15|x\ngarbage\n"
	rows := parseSqueue(out)
	if len(rows) != 3 || rows["10"].Code != 4 || rows["11"].Reason != "PartitionConfig" || rows["12"].Code != 143 || rows["10"].Name != "sokovan-a" {
		t.Errorf("parseSqueue = %+v", rows)
	}
}

func TestParseScontrolJob(t *testing.T) {
	j, err := parseScontrolJob("JobId=1 JobName=t1 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:00")
	if err != nil || j.State != "FAILED" || j.Code != 3 {
		t.Errorf("got %+v, %v; want FAILED, 3", j, err)
	}
	if j, _ := parseScontrolJob("JobState=CANCELLED ExitCode=0:9"); j.Code != 137 {
		t.Errorf("signal 9: code %d, want 137", j.Code)
	}
	if _, err := parseScontrolJob("slurm_load_jobs error: Invalid job id specified"); err == nil {
		t.Errorf("no error for output without JobState")
	}
}

func TestParseCapacity(t *testing.T) {
	// Two nodes up (one listed twice), one down: 8+4 cpus, 1000+500 MiB,
	// 4+2 gpus.
	out := "a|8|1000|gpu:a100:4(S:0-1)|idle\na|8|1000|gpu:a100:4(S:0-1)|idle\nb|4|500|gpu:2|mix\nc|16|9999|(null)|down*\n"
	got, err := parseCapacity(out, "p")
	if err != nil || got["cpu"] != "12" || got["mem"] != "1500m" || got["cuda.device"] != "6" {
		t.Errorf("parseCapacity = %v, %v", got, err)
	}
	if _, err := parseCapacity("", "p"); err == nil {
		t.Errorf("no error for an empty partition")
	}
}
