package sqlite_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// Seeding storetest's benchmark data set with a recursive CTE; values are
// in the stored form (base units: cpu 1 = 1000, mem 1g = 1073741824; times
// in microseconds).
var seed = storetest.BenchSeed{
	Agents: `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {rows})
INSERT INTO agents (id, resource_group, address, architecture, runtime, status, schedulable,
    capacity, occupied, max_kernels, kernel_count, last_heartbeat, epoch, images, labels)
SELECT 'a' || i, 'bench', '', 'x86_64', 'sim', 'ALIVE', 1,
    '{"cpu":"{cpu}000","mem":"68719476736"}', '{}', 0, 0, 1737000000000000, 1, '[]', '{}' FROM n`,
	Sessions: `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {rows})
INSERT INTO sessions (id, name, owner_user, owner_project, owner_domain, type, image, architecture,
    resource_group, cluster_mode, cluster_size, priority, requested, status, status_reason, status_changed_at,
    created_at, starts_at, designated_agents, designated_strict, avoid_agents, outcome, command, env)
SELECT 's' || i, '', 'u' || (i % 100), 'p', 'd', 'batch', 'sleep', 'x86_64',
    'bench', 'single-node', 1, 0, '{"cpu":"1000","mem":"1073741824"}', 'PENDING', '', 1737000000000000,
    1737000000000000, NULL, '[]', 0, '[]', '', '[]', '{}' FROM n`,
	Kernels: `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {rows})
INSERT INTO kernels (id, session_id, cluster_role, cluster_idx, image, architecture, requested,
    agent_id, status, status_reason, status_changed_at, container_id, exit_code)
SELECT 's' || i || '-k0', 's' || i, 'main', 0, 'sleep', 'x86_64', '{"cpu":"1000","mem":"1073741824"}',
    NULL, 'PENDING', '', 1737000000000000, '', NULL FROM n`,
}

// BenchmarkApplyPlan applies a plan of 10,000 single-kernel sessions over
// 1,000 agents, for comparison with the PostgreSQL engine.
//
//	go test -run '^$' -bench ApplyPlan -benchtime 10x ./internal/store/sqlite/
func BenchmarkApplyPlan(b *testing.B) {
	storetest.BenchApplyPlanOn(b, engine(), seed)
}

// decayFill writes storetest's fair-share history with recursive CTEs.
const decayFill = `WITH RECURSIVE h(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM h WHERE i + 1 < {hours}),
    u(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM u WHERE j + 1 < {users}),
    s(slot) AS (VALUES ('cpu'), ('mem'), ('cuda.device'))
INSERT INTO usage_hourly (resource_group, hour, owner_user, owner_project, owner_domain, slot, amount)
SELECT 'bench', ({end} - i * 3600) * 1000000, 'u' || j, 'p' || (j % 5), 'd', slot, 3600.0 * (1 + (i + j) % 7)
FROM h, u, s`

// BenchmarkDecayedUsage times a fairshare group's LoadSnapshot over 90
// days of hourly history of 50 users and 3 slots (324,000 rows): the full
// read, a store's first load, and its cached loads after.
//
//	go test -run '^$' -bench DecayedUsage -benchtime 20x ./internal/store/sqlite/
func BenchmarkDecayedUsage(b *testing.B) {
	storetest.BenchDecayedUsageOn(b, engine(), decayFill)
}
