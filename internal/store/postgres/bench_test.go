package postgres_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// Seeding storetest's benchmark data set with generate_series; values are
// in the stored form (base units: cpu 1 = 1000, mem 1g = 1073741824).
var seed = storetest.BenchSeed{
	Agents: `INSERT INTO agents (id, resource_group, address, architecture, runtime, status, schedulable,
    capacity, occupied, max_kernels, kernel_count, last_heartbeat, epoch, images, labels)
SELECT 'a' || i, 'bench', '', 'x86_64', 'sim', 'ALIVE', TRUE,
    '{"cpu": "16000", "mem": "68719476736"}'::jsonb, '{}'::jsonb, 0, 0, now(), 1, '[]'::jsonb, '{}'::jsonb
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

// BenchmarkApplyPlan applies a plan of 10,000 single-kernel sessions over
// 1,000 agents.
//
//	go test -run '^$' -bench ApplyPlan -benchtime 10x ./internal/store/postgres/
func BenchmarkApplyPlan(b *testing.B) {
	storetest.BenchApplyPlanOn(b, engine(), seed)
}
