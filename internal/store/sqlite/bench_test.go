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
