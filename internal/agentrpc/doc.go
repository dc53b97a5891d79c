// Package agentrpc is the wire between managers and agents: HTTP/JSON,
// authenticated both ways with the agent token as a Bearer token. It owns
// the request and answer types of both directions, the two clients —
// ManagerClient (an agent calling its managers: register, heartbeat,
// events) and AgentClient (a manager calling an agent's RPC server at
// /rpc/: check_and_pull, create_kernels, destroy_kernel, kernels, logs) —
// and the one set of helpers both ends serve with (RequireToken, ReadJSON,
// WriteJSON, WriteError). Events travel as domain.KernelEvent; their JSON
// is held unchanged by a golden test, because agents and managers of
// neighbouring releases talk to each other.
//
// It is a leaf: it may import internal/domain, the standard library and
// well-kept third-party libraries, never the manager's packages
// (coordinator, scheduler, store, kernelstate), so the agent binary links
// none of them. The manager's side of the wire is internal/agentgw.
//
// Imports: internal/domain, internal/pki.
package agentrpc
