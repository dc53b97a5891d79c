package manager

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// leaseKey is the advisory lock every manager of one database contends for.
const leaseKey = 0x736f6b6f76616e // "sokovan"

// pgLease is a PostgreSQL session-level advisory lock held on a connection
// of its own. When the holding manager dies, its connection closes and
// PostgreSQL releases the lock, so another manager takes over within a
// retry interval — no expiry to tune, no clock to trust.
type pgLease struct {
	dsn   string
	log   *slog.Logger
	mu    sync.Mutex
	conn  *pgx.Conn
	held  bool
	next  time.Time
	retry time.Duration
}

func newPGLease(dsn string, log *slog.Logger) *pgLease {
	return &pgLease{dsn: dsn, log: log, retry: time.Second}
}

// Held reports whether this manager holds the lock, trying to take it (at
// most once per retry interval) when it does not, and checking the
// connection still lives when it does.
func (l *pgLease) Held(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		if err := l.conn.Ping(ctx); err == nil {
			return true
		}
		l.log.Warn("lost the coordinator lease (connection gone)")
		l.drop()
	}
	if time.Now().Before(l.next) {
		return false
	}
	l.next = time.Now().Add(l.retry)
	if l.conn == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.Connect(cctx, l.dsn)
		cancel()
		if err != nil {
			return false
		}
		l.conn = conn
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(leaseKey)).Scan(&ok); err != nil {
		l.drop()
		return false
	}
	if ok {
		l.log.Info("took the coordinator lease")
	}
	l.held = ok
	return ok
}

func (l *pgLease) drop() {
	if l.conn != nil {
		_ = l.conn.Close(context.Background())
	}
	l.conn, l.held = nil, false
}

// Close releases the lock by closing its connection.
func (l *pgLease) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop()
}
