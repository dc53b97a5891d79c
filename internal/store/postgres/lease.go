package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is a PostgreSQL session-level advisory lock held on a connection
// of its own. When the holder dies its connection closes and PostgreSQL
// releases the lock, so another holder takes over within a retry interval:
// no expiry to tune, no clock to trust.
//
// The lock is keyed by the lease's name and the store's schema, as the
// store's own locks are, so installations that share a database in
// different schemas each have their own lease.
type Lease struct {
	cfg   *pgx.ConnConfig
	key   int64
	retry time.Duration

	mu   sync.Mutex
	conn *pgx.Conn
	held bool
	next time.Time
}

// Lease returns the lease called name of this store's schema. It takes
// nothing until Held is called, and tries to take the lock at most once
// per retry.
func (s *Store) Lease(name string, retry time.Duration) *Lease {
	cfg := s.eng.pool.Config().ConnConfig.Copy()
	// Names the holder in pg_stat_activity, so an operator can see which
	// manager leads.
	cfg.RuntimeParams["application_name"] = "sokovan lease " + name
	return &Lease{cfg: cfg, key: lockID("lease "+name, s.eng.schema), retry: retry}
}

// Held reports whether this process holds the lease, trying to take it
// (at most once per retry interval) when it does not, and checking that
// the connection still lives when it does.
func (l *Lease) Held(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		if err := l.conn.Ping(ctx); err == nil {
			return true
		}
		l.drop()
	}
	if time.Now().Before(l.next) {
		return false
	}
	l.next = time.Now().Add(l.retry)
	if l.conn == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.ConnectConfig(cctx, l.cfg)
		cancel()
		if err != nil {
			return false
		}
		l.conn = conn
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, l.key).Scan(&ok); err != nil {
		l.drop()
		return false
	}
	l.held = ok
	return ok
}

func (l *Lease) drop() {
	if l.conn != nil {
		// The connection is being given up either way; a close that fails
		// leaves PostgreSQL to notice the socket is gone.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = l.conn.Close(ctx)
		cancel()
	}
	l.conn, l.held = nil, false
}

// Close gives the lease up by closing its connection.
func (l *Lease) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop()
}
