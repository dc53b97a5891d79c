package domain

import (
	"fmt"
	"strings"
)

// renderGroupStates adds the resource group object state table (seed 003)
// to docs/states.md; kept in its own function so other sections merge
// around it.
func renderGroupStates(b *strings.Builder) {
	b.WriteString("\n## Resource groups\n\n")
	b.WriteString("Seed 003's object states, from `GroupTransitions` (internal/domain/groupstate.go).\n")
	b.WriteString("ACTIVE schedules and admits; STOPPED admits but schedules nothing and may start\n")
	b.WriteString("again; DRAINING refuses new sessions (409) but still schedules the ones it holds,\n")
	b.WriteString("and never comes back. Any (event, from) pair not listed is refused with 409.\n")
	b.WriteString("Admission is decided inside the store's CreateSession transaction, so no session\n")
	b.WriteString("is admitted once a change to DRAINING has committed. Delete (DELETE\n")
	b.WriteString("/v1/resource-groups/{name}) takes a DRAINING group that holds no live session and\n")
	b.WriteString("no ALIVE or LOST agent to REMOVED, in one transaction with those counts: the row\n")
	b.WriteString("stays (ended sessions name it) but the group is hidden from every read and refuses\n")
	b.WriteString("submits and agents. REMOVED is final for that group, not for its name: a PUT of\n")
	b.WriteString("the name creates a new group. The CLI has no `rg set --state DRAINING`: `rg rm`\n")
	b.WriteString("is Remove, asking first, draining the group and removing it once it is empty\n")
	b.WriteString("(run again until then); it refuses the default group.\n\n")
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	fmt.Fprintf(b, "    [*] --> %v\n", GroupActive)
	for _, t := range GroupTransitions() {
		fmt.Fprintf(b, "    %v --> %v : %s\n", t.From, t.To, t.Event)
	}
	b.WriteString("```\n\n")
	b.WriteString("| Event | From | To |\n|---|---|---|\n")
	for _, t := range GroupTransitions() {
		fmt.Fprintf(b, "| %s | %v | %v |\n", t.Event, t.From, t.To)
	}
}
