// Package selector holds the scheduler's Selector plugins, which pick an
// agent for a request among candidates that the round state has already
// filtered (usable, architecture, designated and avoided agents):
// concentrated (bin-packing), dispersed (spreading) and round-robin. Ties
// break on agent id, so the choice never depends on input order. Each is
// also a framework.Ranker: it states its order as a rank per agent, and the
// round answers from its agent index instead of calling Select, which stays
// the plain scan the index is tested against.
//
// It may import internal/domain and internal/scheduler/framework only.
//
// Imports: internal/domain, internal/scheduler/framework.
package selector
