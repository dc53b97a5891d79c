package scheduler

import "github.com/sokovan-go/sokovan/internal/scheduler/framework"

// ScanRegistry returns the built-in plugins with every selector reduced to
// its Select, so a round takes the full scan over each tier instead of the
// agent index: the reference the index must agree with.
func ScanRegistry() *Registry {
	r := NewRegistry()
	for name, s := range r.selectors {
		r.selectors[name] = scanOnly{s}
	}
	return r
}

// scanOnly hides a selector's Ranker methods: embedding the interface
// promotes Name and Select only.
type scanOnly struct{ framework.Selector }
