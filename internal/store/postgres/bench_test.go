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
