// Package postgres is the store engine for several manager replicas
// sharing one PostgreSQL database, over a pgx connection pool. Plans are
// applied like Nomad's plan applier: the plan's session rows and then its
// agent rows are locked with SELECT … FOR NO KEY UPDATE in id order (so
// concurrent appliers queue rather than deadlock), the placements are
// checked in Go against what the lock returned (so a second applier sees
// the first one's commit), and the accepted ones are written with one
// statement per table over unnest'ed arrays. Transactions that still lose
// a serialization or deadlock race are retried a few times.
//
// Migrations are embedded and applied at Open with goose's Provider, under
// a PostgreSQL advisory lock scoped to the schema, through a database/sql
// handle that pgx/v5/stdlib makes over the same pool.
//
// It may import internal/store (and its internal packages), internal/domain,
// internal/scheduler/framework, pgx, goose and the standard library.
package postgres
