package postgres_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/store/pgtest"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

var seed = pgtest.BenchSeed

// BenchmarkApplyPlan applies a plan of 10,000 single-kernel sessions over
// 1,000 agents.
//
//	go test -run '^$' -bench ApplyPlan -benchtime 10x ./internal/store/postgres/
func BenchmarkApplyPlan(b *testing.B) {
	storetest.BenchApplyPlanOn(b, engine(), seed)
}

// decayFill writes storetest's fair-share history with generate_series.
const decayFill = `INSERT INTO usage_hourly (resource_group, hour, owner_user, owner_project, owner_domain, slot, amount)
SELECT 'bench', to_timestamp({end} - h * 3600), 'u' || u, 'p' || (u % 5), 'd', s, 3600.0 * (1 + (h + u) % 7)
FROM generate_series(0, {hours} - 1) AS h, generate_series(0, {users} - 1) AS u,
    unnest(ARRAY['cpu', 'mem', 'cuda.device']) AS s`

// BenchmarkDecayedUsage times a fairshare group's LoadSnapshot over 90
// days of hourly history of 50 users and 3 slots (324,000 rows): the full
// read, a store's first load, and its cached loads after.
//
//	go test -run '^$' -bench DecayedUsage -benchtime 20x ./internal/store/postgres/
func BenchmarkDecayedUsage(b *testing.B) {
	storetest.BenchDecayedUsageOn(b, engine(), decayFill)
}
