// Package postgres is the store engine for several manager replicas
// sharing one PostgreSQL database, over a pgx connection pool. The store
// itself (every method, its SQL, the plan applier) is sqlstore's; this
// package owns what is PostgreSQL's alone: the pool, applying the
// migrations at Open (sqlstore's, rendered for PostgreSQL, run by goose
// through a database/sql handle that pgx/v5/stdlib makes over the same
// pool, under an advisory lock scoped to the schema), and the sqlstore
// Engine and Dialect.
//
// Plans are applied like Nomad's plan applier: sqlstore locks the plan's
// session rows and then its agent rows, each in id order, and the dialect
// makes that lock SELECT … FOR NO KEY UPDATE, so concurrent appliers queue
// rather than deadlock and a second applier sees the first one's commit.
// Lists travel as arrays and sets of rows as one array per column,
// unnest'ed together; batches go in one round trip. Transactions that
// still lose a serialization or deadlock race are retried a few times. The
// change feed's rows get their position after commit (NumberChanges).
// Creations under a PENDING limit queue on a transaction-scoped advisory
// lock (KeyLock), and Store.Lease is the leader lease several managers
// elect through; like the migration lock, every advisory key is scoped to
// the schema, so installations sharing a database never contend.
//
// It may import internal/store (and its internal packages),
// internal/store/sqlstore, internal/domain, pgx, goose and the standard
// library.
//
// Imports: internal/store, internal/store/internal/...,
// internal/store/sqlstore, internal/domain, github.com/jackc/pgx/v5/...,
// github.com/pressly/goose/v3/....
package postgres
