// Package pgtest gives tests above the store a fresh PostgreSQL database:
// created for the test, dropped when it ends. Where PostgreSQL cannot be
// reached the test is skipped with the reason, unless CI=true, where it
// fails. It is imported only by tests.
//
// It may import internal/domain, internal/store with its postgres engine
// and storetest, internal/scheduler/framework, pgx and the standard
// library.
//
// Imports: internal/domain, internal/store, internal/store/postgres,
// internal/store/storetest, internal/scheduler/framework,
// github.com/jackc/pgx/v5/....
package pgtest
