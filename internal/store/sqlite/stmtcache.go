package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxCached bounds the statements kept per database. The store's query
// texts are constants (lists travel as one JSON parameter), so a few
// hundred is all of them; the bound only guards against a text built per
// call.
const maxCached = 512

// stmtCache keeps one prepared statement per query text, so SQLite parses a
// query once per connection instead of on every call: parsing was about a
// third of the CPU time of a `sokovan simulate` run.
//
// A text is prepared only between transactions (prepare, from Begin): the
// writer has a single connection, and preparing on the pool while a
// transaction holds it would wait for that transaction forever. The first
// use of a text therefore runs unprepared and asks for it; later ones reuse
// it through Tx.StmtContext, which binds the statement to the
// transaction's connection (preparing it there once if needed).
type stmtCache struct {
	db *sql.DB

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}, wanted: map[string]bool{}}
}

// get returns the prepared statement of query, or nil after noting that
// it is wanted.
func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stmts[query]
	if st == nil && len(c.stmts)+len(c.wanted) < maxCached {
		c.wanted[query] = true
	}
	return st
}

// prepare prepares the wanted texts. A text that fails to prepare is left
// out: it fails again where it is used, with the caller's error handling.
func (c *stmtCache) prepare(ctx context.Context) {
	c.mu.Lock()
	if len(c.wanted) == 0 {
		c.mu.Unlock()
		return
	}
	queries := make([]string, 0, len(c.wanted))
	for q := range c.wanted {
		queries = append(queries, q)
	}
	clear(c.wanted)
	c.mu.Unlock()
	// Without the lock: PrepareContext may wait for the connection, and
	// the transaction holding it may call get meanwhile.
	prepared := make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		if st, err := c.db.PrepareContext(ctx, q); err == nil {
			prepared[q] = st
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range prepared {
		if _, dup := c.stmts[q]; dup {
			st.Close()
			continue
		}
		c.stmts[q] = st
	}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	clear(c.stmts)
}
