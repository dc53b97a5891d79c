package domain

import (
	"fmt"
	"strings"
)

// renderDeployments writes the deployment and route sections of
// docs/states.md from DeploymentHandlers, RouteHandlers and RouteBounds.
func renderDeployments(b *strings.Builder) {
	b.WriteString("## Deployments\n\n")
	b.WriteString("Seed 001's EndpointLifecycle. Deployment handlers return SUCCESS or FAILURE only:\n")
	b.WriteString("no retries, no expiry. CREATED is read as PENDING and never written. The last row,\n")
	b.WriteString("RolloutDeployment, is ours: seed 001 names DEPLOYING (a rolling update) without a handler.\n")
	b.WriteString("A user's destroy sets replicas 0 and DESTROYING in one write.\n\n")
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	fmt.Fprintf(b, "    [*] --> %v\n", DeploymentPending)
	fmt.Fprintf(b, "    [*] --> %v : destroy request\n", DeploymentDestroying)
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
	b.WriteString("\n")

	b.WriteString("## Routes\n\n")
	b.WriteString("Seed 001's RouteStatus: one route is one inference session. Route handlers return\n")
	b.WriteString("SUCCESS, FAILURE or STALE (no fresh health check result).\n\n")
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
	fmt.Fprintf(b, "    %v --> [*]\n", RouteTerminated)
	b.WriteString("```\n\n")
	b.WriteString("| Handler | Route in | SUCCESS | FAILURE | STALE |\n|---|---|---|---|---|\n")
	for _, h := range RouteHandlers() {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", h.Name, joinStatuses(h.Target),
			routeCell(h.Success), routeCell(h.Failure), routeCell(h.Stale))
	}
	b.WriteString("\n### Bounded residence\n\n")
	b.WriteString("No route stays in a non-terminal status for ever. HEALTHY and DEGRADED are bounded by\n")
	b.WriteString("the health check (STALE, then consecutive failures); the others by a time bound whose\n")
	b.WriteString("end is recorded as this handler's outcome:\n\n")
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
