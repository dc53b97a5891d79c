package api

import (
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// applyPreemption lays a request's preemption fields over p, refusing
// the whole request (field named) on a bad value.
func applyPreemption(req *v1.PreemptionRequest, p *domain.Preemption) *apiError {
	if req == nil {
		return nil
	}
	next := *p
	if req.Enabled != nil {
		next.Enabled = *req.Enabled
	}
	if req.Budget != nil {
		next.Budget = *req.Budget
	}
	for _, f := range []struct {
		name string
		v    *string
		dst  *time.Duration
	}{
		{"preemption.min_runtime", req.MinRuntime, &next.MinRuntime},
		{"preemption.window", req.Window, &next.Window},
	} {
		if f.v == nil {
			continue
		}
		d, err := time.ParseDuration(*f.v)
		if err != nil || d < 0 {
			return invalid(f.name, "must be a duration such as \"10m\" or \"1h\" (\"0s\": none)")
		}
		*f.dst = d
	}
	if field, err := next.Validate(); err != nil {
		return invalid(field, "%v", err)
	}
	*p = next
	return nil
}

func wirePreemption(p domain.Preemption) v1.Preemption {
	return v1.Preemption{Enabled: p.Enabled, MinRuntime: formatDuration(p.MinRuntime), Budget: p.Budget,
		Window: formatDuration(p.Window)}
}
