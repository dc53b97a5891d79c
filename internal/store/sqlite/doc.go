// Package sqlite is the embedded store engine: one database file, opened
// with modernc.org/sqlite (pure Go), in WAL mode so readers never wait for
// the writer. The store itself (every method, its SQL, the plan applier)
// is sqlstore's; this package owns what is SQLite's alone: opening the
// file with its pragmas, applying the migrations at Open (sqlstore's,
// rendered for SQLite), and the sqlstore Engine and Dialect.
//
// Writes are serialized twice over: within a process through a single
// writer connection, across processes by BEGIN IMMEDIATE with a busy
// timeout. Because every write transaction holds the database's one write
// lock from its first statement, a plan is checked against rows nobody
// else can change before it commits, so the dialect takes no row locks,
// and the change feed's position is the row id (rows commit in id order).
// Lists and row sets travel as one JSON array each, read with json_each;
// times are stored as microseconds since the Unix epoch.
//
// It may import internal/store (and its internal packages),
// internal/store/sqlstore, internal/domain, the SQLite driver and the
// standard library.
//
// Imports: internal/store, internal/store/internal/...,
// internal/store/sqlstore, internal/domain, modernc.org/sqlite/....
package sqlite
