package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store/sqlite"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// Seeding storetest's benchmark data set with set-based SQL; values are in
// the stored form (base units: cpu 1 = 1000, mem 1g = 1073741824; times in
// microseconds).
const (
	seedAgents = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
INSERT INTO agents (id, resource_group, address, architecture, runtime, status, schedulable,
    capacity, occupied, max_kernels, kernel_count, last_heartbeat, epoch, images, labels)
SELECT 'a' || i, 'bench', '', 'x86_64', 'sim', 'ALIVE', 1,
    '{"cpu":"16000","mem":"68719476736"}', '{}', 0, 0, 1737000000000000, 1, '[]', '{}' FROM n`
	seedSessions = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
INSERT INTO sessions (id, name, owner_user, owner_project, owner_domain, type, image, architecture,
    resource_group, cluster_mode, cluster_size, priority, requested, status, status_reason, status_changed_at,
    created_at, starts_at, designated_agents, designated_strict, avoid_agents, outcome, command, env)
SELECT 's' || i, '', 'u' || (i % 100), 'p', 'd', 'batch', 'sleep', 'x86_64',
    'bench', 'single-node', 1, 0, '{"cpu":"1000","mem":"1073741824"}', 'PENDING', '', 1737000000000000,
    1737000000000000, NULL, '[]', 0, '[]', '', '[]', '{}' FROM n`
	seedKernels = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
INSERT INTO kernels (id, session_id, cluster_role, cluster_idx, image, architecture, requested,
    agent_id, status, status_reason, status_changed_at, container_id, exit_code)
SELECT 's' || i || '-k0', 's' || i, 'main', 0, 'sleep', 'x86_64', '{"cpu":"1000","mem":"1073741824"}',
    NULL, 'PENDING', '', 1737000000000000, '', NULL FROM n`
)

// BenchmarkApplyPlan applies a plan of 10,000 single-kernel sessions over
// 1,000 agents, for comparison with the PostgreSQL engine.
//
//	go test -run '^$' -bench ApplyPlan -benchtime 20x ./internal/store/sqlite/
func BenchmarkApplyPlan(b *testing.B) {
	const sessions, agents = 10_000, 1_000
	path := filepath.Join(b.TempDir(), "bench.db")
	reg := domain.DefaultRegistry()
	s, err := sqlite.Open(b.Context(), path, sqlite.Options{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g := domain.ResourceGroup{Name: storetest.BenchGroup, State: domain.GroupActive, Sequencer: "fifo",
		Selector: "round-robin", HeadOfLine: domain.HOLSkip, MaxRetries: 3}
	if err := s.PutResourceGroup(b.Context(), g); err != nil {
		b.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []struct {
		sql string
		n   int
	}{{seedAgents, agents}, {seedSessions, sessions}, {seedKernels, sessions}} {
		if _, err := raw.ExecContext(b.Context(), q.sql, q.n); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	if _, err := raw.ExecContext(b.Context(), "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	storetest.BenchApplyPlan(b, s, reg, sessions, agents)
}
