package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/postgres"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// BenchSeed seeds storetest's benchmark data set with generate_series,
// for the store's benchmarks and the coordinator's at scale; values are
// in the stored form (base units: cpu 1 = 1000, mem 1g = 1073741824).
var BenchSeed = storetest.BenchSeed{
	Agents: `INSERT INTO agents (id, resource_group, address, architecture, runtime, status, schedulable,
    capacity, occupied, max_kernels, kernel_count, last_heartbeat, epoch, images, labels)
SELECT 'a' || i, 'bench', '', 'x86_64', 'sim', 'ALIVE', TRUE,
    '{"cpu": "{cpu}000", "mem": "68719476736"}'::jsonb, '{}'::jsonb, 0, 0, now(), 1, '[]'::jsonb, '{}'::jsonb
FROM generate_series(0, {rows} - 1) AS i`,
	Sessions: `INSERT INTO sessions (id, name, owner_user, owner_project, owner_domain, type, image, architecture,
    resource_group, cluster_mode, cluster_size, priority, requested, status, status_reason, status_changed_at,
    created_at, starts_at, designated_agents, designated_strict, avoid_agents, outcome, command, env)
SELECT 's' || i, '', 'u' || (i % 100), 'p', 'd', 'batch', 'sleep', 'x86_64',
    'bench', 'single-node', 1, 0, '{"cpu": "1000", "mem": "1073741824"}'::jsonb, 'PENDING', '', now(),
    now(), NULL, '[]'::jsonb, FALSE, '[]'::jsonb, '', '[]'::jsonb, '{}'::jsonb
FROM generate_series(0, {rows} - 1) AS i`,
	Kernels: `INSERT INTO kernels (id, session_id, cluster_role, cluster_idx, image, architecture, requested,
    agent_id, status, status_reason, status_changed_at, container_id, exit_code)
SELECT 's' || i || '-k0', 's' || i, 'main', 0, 'sleep', 'x86_64', '{"cpu": "1000", "mem": "1073741824"}'::jsonb,
    NULL, 'PENDING', '', now(), '', NULL
FROM generate_series(0, {rows} - 1) AS i`,
}

// Engine is storetest's view of PostgreSQL for tests above the store: a
// database of its own per call of NewDB (see NewDatabase).
func Engine() storetest.Engine {
	return storetest.Engine{
		NewDB: NewDatabase,
		Open: func(ctx context.Context, db string, opts storetest.Options) (store.Store, error) {
			return postgres.Open(ctx, db, postgres.Options{Registry: opts.Registry, Fault: opts.Fault})
		},
		Exec: func(t testing.TB, db, query string) {
			t.Helper()
			conn, err := pgx.Connect(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(t.Context(), query); err != nil {
				t.Fatalf("raw SQL %q: %v", query, err)
			}
		},
	}
}
