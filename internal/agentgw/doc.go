// Package agentgw is the manager's side of the agent wire. Gateway serves
// agents' calls under /v1/agent/ — register (refusing an impersonation of a
// live agent), heartbeat and events — and hands what they say to the store
// and the coordinator, or to the event bus when managers share one. Agents
// adapts an agentrpc.AgentClient to the coordinator's port, so the
// coordinator and the wire keep their own types and never import each
// other; a kernel spec is domain.KernelSpec on both, and Agents converts
// only what each side holds its own way (slots, time limit, peers).
//
// It may import internal/agentrpc, internal/coordinator, internal/store
// (for its errors), internal/domain and the standard library. Only the
// manager wiring (internal/manager) and tests import it; the agent daemon
// never does.
//
// Imports: internal/agentrpc, internal/coordinator, internal/store, internal/pki,
// internal/domain.
package agentgw
