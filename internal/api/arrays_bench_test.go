package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// BenchmarkCreateArray submits one 10,000-element array per iteration
// through the real API (HTTP, auth, admission) into the real store, one
// request each. The coordinator is stopped, so only the submit is timed.
func BenchmarkCreateArray(b *testing.B) {
	const elements = 10000
	for _, engine := range apitest.Engines {
		b.Run(engine, func(b *testing.B) {
			m := apitest.New(b, apitest.Options{Engine: engine, Manual: true})
			alice := m.User("alice", "user", "p1")
			b.ResetTimer()
			for i := range b.N {
				body := arrayBody(fmt.Sprintf("sweep%d", i), fmt.Sprintf("0-%d%%10", elements-1))
				if code, raw := m.Raw(alice, "POST", "/v1/arrays", body); code != http.StatusCreated {
					b.Fatalf("create array: %d %s", code, raw)
				}
			}
			b.ReportMetric(float64(b.N*elements)/b.Elapsed().Seconds(), "elements/s")
		})
	}
}
