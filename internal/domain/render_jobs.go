package domain

import (
	"fmt"
	"strings"
)

// renderJobStates adds the job state table (seed 003's application
// states) to docs/states.md, in its own function so other sections merge
// around it.
func renderJobStates(b *strings.Builder) {
	b.WriteString("\n## Jobs\n\n")
	b.WriteString("Seed 003's application states, from `JobTransitions` (internal/domain/job.go); the\n")
	b.WriteString("coordinator raises each event from what the job's members do (internal/coordinator/jobs.go).\n")
	b.WriteString("Current YuniKorn has removed STARTING (YUNIKORN-2495); the seed keeps it, and so do we:\n")
	fmt.Fprintf(b, "a one-member job leaves it after the Starting timeout (default %s). COMPLETING becomes\n", DefaultJobStartingTimeout)
	fmt.Fprintf(b, "COMPLETED after %s and COMPLETED expires after the retention (default %s).\n\n", DefaultJobCompletingTimeout, DefaultJobRetention)
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	fmt.Fprintf(b, "    [*] --> %v\n", JobNew)
	for _, t := range JobTransitions() {
		fmt.Fprintf(b, "    %v --> %v : %s\n", t.From, t.To, t.Event)
	}
	for _, s := range JobStates() {
		if s.Final() {
			fmt.Fprintf(b, "    %v --> [*]\n", s)
		}
	}
	b.WriteString("```\n\n")
	b.WriteString("| Event | From | To | When |\n|---|---|---|---|\n")
	for _, t := range JobTransitions() {
		fmt.Fprintf(b, "| %s | %v | %v | %s |\n", t.Event, t.From, t.To, t.Why)
	}
}
