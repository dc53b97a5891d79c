package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options configure Open.
type Options struct {
	// Registry converts stored slot names to vector indexes. Required.
	Registry *domain.Registry
	// MaxConns caps the pool; zero keeps pgxpool's default.
	MaxConns int32
	// Fault is for tests only; see store.FaultHook.
	Fault store.FaultHook
}

// Store is a store.Store over a PostgreSQL database.
type Store struct {
	reg   *domain.Registry
	pool  *pgxpool.Pool
	fault store.FaultHook
	// changesLock is the advisory lock that numbers the change feed,
	// scoped to the schema like the migration lock.
	changesLock int64
}

var _ store.Store = (*Store)(nil)

// maxAttempts bounds the retries of a transaction that lost a
// serialization or deadlock race.
const maxAttempts = 5

// Open connects to the database named by dsn (a URL or keyword/value
// string; a search_path parameter selects the schema) and brings its
// schema up to date.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.Registry == nil {
		return nil, fmt.Errorf("postgres: open: %w: a slot registry is required", store.ErrInvalid)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w: %v", store.ErrInvalid, err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w: %v", store.ErrUnavailable, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, classify(ctx, "postgres: open", err)
	}
	schema, err := migrate(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{reg: opts.Registry, pool: pool, fault: opts.Fault,
		changesLock: lockID("status_changes", schema)}, nil
}

// migrate brings the schema up to date and returns its name.
func migrate(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return "", fmt.Errorf("postgres: migrations: %w", err)
	}
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", classify(ctx, "postgres: migrate", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()),
		goose.WithSessionLocker(advisoryLock{id: lockID("migrations", schema)}))
	if err != nil {
		return "", fmt.Errorf("postgres: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return "", classify(ctx, "postgres: migrate", err)
	}
	return schema, nil
}

// advisoryLock makes replicas that open the same schema at once migrate it
// one after the other. It blocks in pg_advisory_lock until the lock is free
// or ctx ends, instead of polling.
type advisoryLock struct{ id int64 }

func (l advisoryLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, l.id)
	return err
}

func (l advisoryLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, l.id)
	return err
}

// lockID names an advisory lock scoped to one schema, so schemas in one
// database (tests, tenants) do not contend.
func lockID(purpose, schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("sokovan-go " + purpose + " " + schema))
	return int64(h.Sum64())
}

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// write runs fn in one READ COMMITTED transaction, retrying it from the
// start when it lost a serialization or deadlock race; fn must therefore
// read everything it decides on inside the transaction.
func (s *Store) write(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	var err error
	for range maxAttempts {
		if err = s.attempt(ctx, pgx.TxOptions{}, fn); err == nil || !retryable(err) || ctx.Err() != nil {
			break
		}
	}
	return classify(ctx, op, err)
}

// read runs fn in one read-only REPEATABLE READ transaction, so all its
// queries see one snapshot.
func (s *Store) read(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	return classify(ctx, op, s.attempt(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn))
}

func (s *Store) attempt(ctx context.Context, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		// With ctx done, pgx cannot send ROLLBACK and closes the
		// connection instead; the server then rolls back.
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

func (s *Store) hook(point string) error {
	if s.fault == nil {
		return nil
	}
	return s.fault(point)
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// classify turns a driver error into one of store's classes. Errors that
// already carry a store class or come from the context pass through.
func classify(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	for _, known := range []error{store.ErrNotFound, store.ErrConflict, store.ErrGuardFailed,
		store.ErrInvalid, store.ErrCorrupt, store.ErrUnavailable, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, known) {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return fmt.Errorf("%s: %w: a row with the same key exists", op, store.ErrConflict)
		case pe.Code == "23503":
			return fmt.Errorf("%s: %w: it refers to a row that does not exist", op, store.ErrNotFound)
		case strings.HasPrefix(pe.Code, "23") || strings.HasPrefix(pe.Code, "22"):
			// Integrity constraint violations and data exceptions.
			return fmt.Errorf("%s: %w: the schema refuses the value", op, store.ErrInvalid)
		case pe.Code == "57014" && ctx.Err() != nil:
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w: %v", op, store.ErrUnavailable, err)
}

// ts stores the zero time as NULL and every other time in UTC.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}
