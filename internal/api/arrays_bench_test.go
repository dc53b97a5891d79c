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

// BenchmarkRemoveArray ends a 10,000-element array, every element
// PENDING, with one DELETE per iteration (the submit is not timed).
func BenchmarkRemoveArray(b *testing.B) {
	const elements = 10000
	for _, engine := range apitest.Engines {
		b.Run(engine, func(b *testing.B) {
			m := apitest.New(b, apitest.Options{Engine: engine, Manual: true})
			alice := m.User("alice", "user", "p1")
			for i := range b.N {
				b.StopTimer()
				name := fmt.Sprintf("sweep%d", i)
				if code, raw := m.Raw(alice, "POST", "/v1/arrays", arrayBody(name, fmt.Sprintf("0-%d", elements-1))); code != http.StatusCreated {
					b.Fatalf("create array: %d %s", code, raw)
				}
				b.StartTimer()
				if code, raw := m.Raw(alice, "DELETE", "/v1/arrays/"+name, nil); code != http.StatusAccepted {
					b.Fatalf("remove array: %d %s", code, raw)
				}
			}
		})
	}
}
