package domain

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite docs/states.md from RenderStates instead of comparing against it")

// statesDoc is relative to this package's directory, where go test runs.
var statesDoc = filepath.Join("..", "..", "docs", "states.md")

func TestStatesDocIsCurrent(t *testing.T) {
	got := RenderStates()
	if *update {
		if err := os.MkdirAll(filepath.Dir(statesDoc), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(statesDoc, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", statesDoc)
		return
	}
	want, err := os.ReadFile(statesDoc)
	if err != nil {
		t.Fatalf("reading %s: %v\nGenerate it with: %s", statesDoc, err, regenerateCommand)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Fatalf("%s is stale: it no longer matches RenderStates().\n"+
			"Regenerate it with: %s\n(-file +RenderStates):\n%s", statesDoc, regenerateCommand, diff)
	}
}

func TestRenderStatesIsDeterministic(t *testing.T) {
	first := RenderStates()
	for range 20 {
		if got := RenderStates(); got != first {
			t.Fatalf("RenderStates changed between calls (-first +later):\n%s", cmp.Diff(first, got))
		}
	}
}

func TestRenderStatesDrawsEveryTableEntry(t *testing.T) {
	// The golden file only proves the document matches the renderer; these
	// lines prove the renderer draws what the tables hold.
	doc := RenderStates()
	for _, line := range []string{
		"stateDiagram-v2",
		"    [*] --> PENDING",
		"    PENDING --> SCHEDULED : ScheduleNewSessions (success)",
		"    PENDING --> CANCELLED : ScheduleNewSessions (expired, give_up)",
		"    SCHEDULED --> PREPARING : PrepareSessions (success)",
		"    PREPARING --> PREPARING : PrepareSessions (success)",
		"    PREPARING --> PENDING : PrepareSessions (expired, give_up)",
		"    PREPARED --> CREATING : StartSessions (success)",
		"    PREPARED --> PENDING : StartSessions (expired, give_up)",
		"    TERMINATING --> TERMINATED : TerminateSessions (success, expired, give_up)",
		"    SCHEDULED --> PREPARED : PromoteToPrepared (success)",
		"    PREPARING --> PREPARED : PromoteToPrepared (success)",
		"    CREATING --> RUNNING : PromoteToRunning (success)",
		"    TERMINATING --> TERMINATED : PromoteToTerminated (success)",
		"    RUNNING --> TERMINATING : DetectTermination (success)",
		"    TERMINATED --> [*]",
		"    CANCELLED --> [*]",
		"| ScheduleNewSessions | PENDING | PENDING | SCHEDULED / SCHEDULED | (maintain) | CANCELLED / CANCELLED | CANCELLED / CANCELLED |",
		"| PromoteToRunning | CREATING | PENDING, SCHEDULED, PREPARING, PULLING, PREPARED, CREATING | NOT_ANY | RUNNING |",
		"| DetectTermination | RUNNING | TERMINATED, CANCELLED, ERROR | ANY | TERMINATING |",
		"    PREPARING --> PULLING",
		"    PULLING --> PREPARED",
		"    TERMINATING --> TERMINATED",
		"    ERROR --> [*]",
		"    READY --> DEPLOYING : UserUpdate (spec change)",
		"    DEPLOYING --> DESTROYING : UserDestroy (destroy)",
		"    HEALTHY --> TERMINATING : ScalingDeployment, RolloutDeployment, DestroyingDeployment",
		"    FAILED_TO_START --> TERMINATING : DestroyingDeployment",
		regenerateCommand,
	} {
		// Matching up to the newline keeps a session edge with a label
		// from satisfying the bare kernel edge of the same name.
		if !strings.Contains(doc, line+"\n") {
			t.Errorf("RenderStates() lacks %q", line)
		}
	}
	// Each lifecycle and promotion handler gets one table row, and each
	// legal kernel edge one diagram line.
	for _, h := range LifecycleHandlers() {
		if n := strings.Count(doc, "| "+string(h.Name)+" |"); n != 1 {
			t.Errorf("lifecycle handler %s has %d table rows, want 1", h.Name, n)
		}
	}
	for _, h := range PromotionHandlers() {
		if n := strings.Count(doc, "| "+string(h.Name)+" |"); n != 1 {
			t.Errorf("promotion handler %s has %d table rows, want 1", h.Name, n)
		}
	}
	_, kernelPart, ok := strings.Cut(doc, "## Kernels")
	if !ok {
		t.Fatal("RenderStates() has no Kernels section")
	}
	for _, e := range KernelTransitions() {
		line := "    " + e[0].String() + " --> " + e[1].String() + "\n"
		if n := strings.Count(kernelPart, line); n != 1 {
			t.Errorf("kernel edge %v -> %v drawn %d times, want 1", e[0], e[1], n)
		}
	}
	// A colon inside a label ends it in Mermaid's state-diagram lexer.
	for _, line := range strings.Split(doc, "\n") {
		if _, label, ok := strings.Cut(line, " : "); ok && strings.Contains(label, ":") {
			t.Errorf("edge label with a colon breaks Mermaid: %q", line)
		}
	}
}
