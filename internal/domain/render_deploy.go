package domain

import (
	"fmt"
	"slices"
	"strings"
)

// renderDeployments writes the deployment and route sections of
// docs/states.md from DeploymentHandlers, RouteHandlers and RouteBounds.
func renderDeployments(b *strings.Builder) {
	b.WriteString(`## Deployments

Seed 001's EndpointLifecycle. Deployment handlers return SUCCESS or FAILURE only:
no retries, no expiry. CREATED is read as PENDING and never written. The last row,
RolloutDeployment, is ours: seed 001 names DEPLOYING (a rolling update) without a handler.
The seed's table is the controller's alone; the moves a user's request makes, drawn with
the request's name, are made by the API in the write that takes the request (a destroy
sets replicas 0 and DESTROYING in one write), and the handlers go on from there.

`)
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	fmt.Fprintf(b, "    [*] --> %v\n", DeploymentPending)
	for _, m := range UserMoves() {
		for _, from := range m.From {
			fmt.Fprintf(b, "    %v --> %v : %s (%s)\n", from, m.To, m.Name, m.When)
		}
	}
	for _, h := range DeploymentHandlers() {
		for _, from := range h.Target {
			for _, r := range []RouteResult{RouteSuccess, RouteFailure} {
				if to := h.For(r); to != 0 {
					fmt.Fprintf(b, "    %v --> %v : %s (%s)\n", from, to, h.Name, resultLabel(Result(r)))
				}
			}
		}
	}
	fmt.Fprintf(b, "    %v --> [*]\n", DeploymentDestroyed)
	b.WriteString("```\n\n")
	b.WriteString("| Handler | Deployment in | SUCCESS | FAILURE |\n|---|---|---|---|\n")
	for _, h := range DeploymentHandlers() {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", h.Name, joinStatuses(h.Target), deployCell(h.Success), deployCell(h.Failure))
	}
	b.WriteString("\n| User's request | Deployment in | Moves to |\n|---|---|---|\n")
	for _, m := range UserMoves() {
		fmt.Fprintf(b, "| %s (%s) | %s | %v |\n", m.Name, m.When, joinStatuses(m.From), m.To)
	}
	b.WriteString("\n")

	b.WriteString(`## Routes

Seed 001's RouteStatus: one route is one inference session. Route handlers return
SUCCESS, FAILURE or STALE (no fresh health check result). A route is also ended by the
deployment handlers, outside the route table, when the deployment no longer wants it;
those edges are labelled with the deployment handler.

`)
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	fmt.Fprintf(b, "    [*] --> %v\n", RouteProvisioning)
	for _, h := range RouteHandlers() {
		for _, from := range h.Target {
			for _, r := range []RouteResult{RouteSuccess, RouteFailure, RouteStale} {
				if to := h.For(r); to != 0 && to != from {
					fmt.Fprintf(b, "    %v --> %v : %s (%s)\n", from, to, h.Name, resultLabel(Result(r)))
				}
			}
		}
	}
	// One edge per source status, naming every deployment handler that
	// ends a route there, keeps the diagram readable.
	for _, from := range RouteStatuses() {
		var names []string
		for _, e := range RouteEnds() {
			if slices.Contains(e.From, from) {
				names = append(names, string(e.Handler))
			}
		}
		if len(names) > 0 {
			fmt.Fprintf(b, "    %v --> %v : %s\n", from, RouteTerminating, strings.Join(names, ", "))
		}
	}
	fmt.Fprintf(b, "    %v --> [*]\n", RouteTerminated)
	b.WriteString("```\n\n")
	b.WriteString("| Handler | Route in | SUCCESS | FAILURE | STALE |\n|---|---|---|---|---|\n")
	for _, h := range RouteHandlers() {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", h.Name, joinStatuses(h.Target),
			routeCell(h.Success), routeCell(h.Failure), routeCell(h.Stale))
	}
	b.WriteString("\n| Deployment handler | When | Route in | Moves to |\n|---|---|---|---|\n")
	for _, e := range RouteEnds() {
		fmt.Fprintf(b, "| %s | %s | %s | %v |\n", e.Handler, e.When, joinStatuses(e.From), RouteTerminating)
	}
	b.WriteString(`
### Bounded residence

No route stays in a non-terminal status for ever. HEALTHY and DEGRADED are bounded by
the health check (STALE, then consecutive failures); the others by a time bound whose
end is recorded as this handler's outcome:

`)
	b.WriteString("| Status | Ended by | Result |\n|---|---|---|\n")
	for _, rb := range RouteBounds() {
		h, _ := RouteHandlerByName(rb.Handler)
		fmt.Fprintf(b, "| %v | %s | %s → %s |\n", rb.Status, rb.Handler, rb.Result, routeCell(h.For(rb.Result)))
	}
	b.WriteString("\n")
}

func deployCell(s DeploymentStatus) string {
	if s == 0 {
		return "(maintain)"
	}
	return s.String()
}

func routeCell(s RouteStatus) string {
	if s == 0 {
		return "(maintain)"
	}
	return s.String()
}
