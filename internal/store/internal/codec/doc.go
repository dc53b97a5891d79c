// Package codec turns stored rows into domain values and back, the same way
// for every engine: slot vectors as JSON objects keyed by slot name, lists
// and maps as JSON, statuses by name, times as UTC with microsecond
// precision. sqlstore scans with the column lists declared here, so a row
// reads the same whichever database holds it. A value that cannot be
// decoded becomes a *store.CorruptRowError naming the row.
//
// It may import internal/store, internal/domain,
// internal/scheduler/framework and the standard library.
//
// Imports: internal/store, internal/domain, internal/scheduler/framework.
package codec
