package postgres_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// BenchmarkScale loads and applies a plan over issue 18's group of 10k
// agents and 100k pending sessions.
//
//	go test -run '^$' -bench Scale -benchtime 3x -timeout 30m ./internal/store/postgres/
func BenchmarkScale(b *testing.B) {
	storetest.BenchScaleOn(b, engine(), seed)
}
