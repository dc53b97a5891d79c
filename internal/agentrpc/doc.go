// Package agentrpc is the wire between managers and agents: HTTP/JSON,
// authenticated both ways with the agent token as a Bearer token.
//
// Agents call the manager's Gateway (mounted at /v1/agent/): register,
// heartbeat and events. Managers call an agent's RPC server at /rpc/:
// check_and_pull, create_kernels, destroy_kernel and logs; AgentClient is
// that caller and satisfies coordinator.Agents.
//
// It may import internal/domain, internal/kernelstate, internal/coordinator
// (for the Agents types and the event/reconcile entry points) and
// internal/store (types and errors). Nothing imports it but the agent
// daemon, the manager wiring and cmd.
package agentrpc
