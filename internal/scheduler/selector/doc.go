// Package selector holds the scheduler's Selector plugins, which pick an
// agent for a request among candidates that the round state has already
// filtered (usable, architecture, designated and avoided agents):
// concentrated (bin-packing), dispersed (spreading) and round-robin. Ties
// break on agent id, so the choice never depends on input order.
//
// It may import internal/domain and internal/scheduler/framework only.
package selector
