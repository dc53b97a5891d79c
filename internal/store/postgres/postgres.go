package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/sqlstore"
)

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
	e := &engine{pool: pool}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, e.failed(ctx, "postgres: open", err)
	}
	schema, err := e.migrate(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	e.schema = schema
	e.changesLock = lockID("status_changes", schema)
	return &Store{Store: sqlstore.New(opts.Registry, e, dialect, opts.Fault), eng: e}, nil
}

// Store is a store.Store over a PostgreSQL database.
type Store struct {
	*sqlstore.Store
	eng *engine
}

// Options configure Open.
type Options struct {
	// Registry converts stored slot names to vector indexes. Required.
	Registry *domain.Registry
	// MaxConns caps the pool; zero keeps pgxpool's default.
	MaxConns int32
	// Fault is for tests only; see store.FaultHook.
	Fault store.FaultHook
}

// engine is the sqlstore.Engine of one schema, over a pgx pool. Write
// transactions run at READ COMMITTED and lock what they will write
// ({lock} is FOR NO KEY UPDATE), so a second plan applier waits for the
// first and then reads its commit; read transactions are REPEATABLE READ,
// one snapshot.
type engine struct {
	pool *pgxpool.Pool
	// schema is the one the store lives in; every advisory lock it takes
	// is scoped to it (lockID).
	schema string
	// changesLock is the advisory lock that numbers the change feed,
	// scoped to the schema like the migration lock.
	changesLock int64
}

// migrate brings the schema up to date and returns its name.
func (e *engine) migrate(ctx context.Context) (string, error) {
	var schema string
	if err := e.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", e.failed(ctx, "postgres: migrate", err)
	}
	db := stdlib.OpenDBFromPool(e.pool)
	defer db.Close()
	err := sqlstore.Migrate(ctx, db, sqlstore.Postgres,
		goose.WithSessionLocker(advisoryLock{id: lockID("migrations", schema)}))
	if err != nil {
		return "", e.failed(ctx, "postgres: migrate", err)
	}
	return schema, nil
}

// failed reports an error of Open as the store would.
func (e *engine) failed(ctx context.Context, op string, err error) error {
	if class := e.Classify(err); class != nil {
		return fmt.Errorf("%s: %w", op, class)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w: %v", op, store.ErrUnavailable, err)
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

func (e *engine) Begin(ctx context.Context, access sqlstore.Access) (sqlstore.Tx, error) {
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	if access == sqlstore.Write {
		opts = pgx.TxOptions{}
	}
	tx, err := e.pool.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return pgTx{tx}, nil
}

// Classify names the SQLSTATE classes of constraint failures and bad
// values; anything else (a lost connection, a server going down) is the
// store's ErrUnavailable.
func (e *engine) Classify(err error) error {
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe):
		return nil
	case pe.Code == "23505":
		return sqlstore.ErrKeyExists
	case pe.Code == "23503":
		return sqlstore.ErrMissingRow
	case strings.HasPrefix(pe.Code, "23") || strings.HasPrefix(pe.Code, "22"):
		// Integrity constraint violations and data exceptions.
		return sqlstore.ErrSchemaValue
	}
	return nil
}

// Retryable: serialization failures and deadlocks. Writers lock rows in
// one order, so deadlocks are not expected, but a retry is cheap where
// one happens.
func (e *engine) Retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// Close closes the pool.
func (e *engine) Close() error {
	e.pool.Close()
	return nil
}

// KeyLock locks key, scoped to the schema, until the transaction ends.
func (e *engine) KeyLock(key string) sqlstore.Stmt {
	return sqlstore.Stmt{SQL: `SELECT pg_advisory_xact_lock($1)`, Args: []any{lockID("key "+key, e.schema)}}
}

// Rows get their feed position after they commit (see the migration
// 00002_status_changes.sql for why seq cannot be the position). One reader
// at a time, under a transaction-scoped advisory lock, numbers every
// committed row still without a position, in seq order, after the highest
// position so far. The statement reads the highest position in its own
// snapshot, taken after the lock was granted, so it sees the previous
// holder's numbers.
const (
	anyUnnumbered = `SELECT EXISTS (SELECT 1 FROM status_changes WHERE pos IS NULL)`
	lockChanges   = `SELECT pg_advisory_xact_lock($1)`
	numberChanges = `WITH top AS (SELECT COALESCE(MAX(pos), 0) AS m FROM status_changes),
todo AS (SELECT seq, row_number() OVER (ORDER BY seq) AS rn FROM status_changes WHERE pos IS NULL)
UPDATE status_changes c SET pos = top.m + todo.rn FROM todo, top WHERE c.seq = todo.seq`
)

// NumberChanges gives every committed change without a position its
// position. It writes only when there is something to number, so idle
// watchers cost one index probe each.
func (e *engine) NumberChanges(ctx context.Context, tx sqlstore.Tx) error {
	var pending bool
	if err := tx.QueryRow(ctx, anyUnnumbered).Scan(&pending); err != nil || !pending {
		return err
	}
	// Blocking, not try-lock: a caller that just committed a change must
	// find it numbered when this returns.
	if _, err := tx.Exec(ctx, lockChanges, e.changesLock); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, numberChanges)
	return err
}
