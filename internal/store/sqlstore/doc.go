// Package sqlstore is the store written once for every SQL engine: each
// store.Store method, its query text, its transaction and retry loop, its
// error classes and the plan applier (Nomad's: lock the plan's sessions,
// then its agents, each in id order, re-check every placement in memory
// with planguard, write the ones that hold with one statement per table;
// before them, in the same transaction, the plan's preemptions: victims
// still RUNNING to TERMINATING, recorded, and requeued when they asked,
// preempt.go), and the snapshot cache (snapcache.go): the cluster's part
// of LoadSnapshot kept between rounds and brought up to date from the
// change feed and the groups' generations in the same read.
// An engine package (store/sqlite, store/postgres) opens its database,
// migrates it, and hands New an Engine and a Dialect: the seam where the
// databases truly differ.
//
//   - Engine: transactions (SQLite's single writer with BEGIN IMMEDIATE;
//     PostgreSQL's READ COMMITTED writes and REPEATABLE READ reads), batches
//     (one round trip on PostgreSQL), how list and row-set parameters and
//     times are encoded, which driver errors mean which store class, and
//     which failures are retried (PostgreSQL's serialization and deadlock
//     losses; SQLite waits out a busy database in the driver instead).
//   - ChangeNumberer, implemented by PostgreSQL only: its change feed rows
//     get their position after commit, under an advisory lock.
//   - KeyLocker, implemented by PostgreSQL only: a lock on a key (an
//     advisory lock of the schema) that creations counting the same
//     PENDING limit queue on; SQLite's one writer serialises them anyway.
//   - Dialect: fragments of query text.
//
// Query text is written once, in PostgreSQL's SQL with numbered $n
// parameters, plus a few fragments in braces ({in $n}, {rows $n …},
// {lock}, …; see Dialect) that each engine writes its own way; the store
// renders a text once per engine and keeps it. One text rather than
// hand-written constants per engine, because the engines' texts were the
// same statement for all but a handful of clauses (placeholders, how a
// list or a set of rows is read, the row lock, a JSON object's members),
// and two copies of fifty statements drift apart where a fragment cannot.
// Where the engines' SQL differs beyond a fragment, the text was rewritten
// into a form both accept (CAST instead of ::, MAX(id) instead of DISTINCT
// ON, a guarded UPDATE before reading an agent's epoch).
//
// The schema is written once the same way: the goose migrations in
// schema/ are text/template files, rendered per engine at Open (Schema,
// Migrate) with a few functions for what each spells its own way
// ({{json}}, {{time}}, {{bigint}}, {{bool "col"}}, {{serial}},
// {{strict}}, …; see schemaFuncs) and {{if .Postgres}} … {{else}} … {{end}}
// around the statements that differ whole (triggers). Each version keeps
// the number and name it had when the engines had a folder each, so a
// database migrated by either is already at its version.
//
// It may import internal/store (and its internal packages codec and
// planguard), internal/domain, internal/scheduler/framework, goose and the
// standard library; no driver.
//
// Imports: internal/store, internal/store/internal/codec,
// internal/store/internal/planguard, internal/domain,
// internal/scheduler/framework, github.com/pressly/goose/v3/....
// Never links: github.com/jackc/pgx/v5/..., modernc.org/sqlite/....
package sqlstore
