// Package sqlite is the embedded store engine: one database file, opened
// with modernc.org/sqlite (pure Go), in WAL mode so readers never wait for
// the writer. Writes are serialized twice over: within a process through a
// single writer connection, across processes by BEGIN IMMEDIATE with a busy
// timeout. Because every write transaction holds the database's one write
// lock from its first statement, a plan is checked against rows nobody else
// can change before it commits, and no row locks are needed.
//
// Migrations are embedded and applied at Open with goose's Provider.
//
// It may import internal/store (and its internal packages), internal/domain,
// internal/scheduler/framework, the SQLite driver, goose and the standard
// library.
package sqlite
