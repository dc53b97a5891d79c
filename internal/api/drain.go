package api

import (
	"context"
	"net/http"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// maxDrainDeadline bounds ?deadline so the stored nanoseconds cannot
// overflow; a year is longer than any drain anyone waits for.
const maxDrainDeadline = 365 * 24 * time.Hour

// drain makes the agent unschedulable and records the drain; with
// ?deadline the coordinator's sweep terminates what still runs there once
// it has passed.
func (s *Server) drain(w http.ResponseWriter, r *http.Request) error {
	a, err := s.agentByPath(r)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	var deadline time.Time
	if q := r.URL.Query().Get("deadline"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < 0 || d > maxDrainDeadline {
			return invalid("deadline", "must be a duration from \"0s\" (terminate at once) to \"8760h\", such as \"1h\"")
		}
		deadline = now.Add(d)
		if d == 0 {
			// Zero stored means no deadline; a drain that ends things at once
			// keeps the smallest deadline that has already passed.
			deadline = now.Add(-time.Nanosecond)
		}
	}
	if err := s.store.DrainAgent(r.Context(), a.ID, now, deadline); err != nil {
		return err
	}
	if !deadline.IsZero() && !deadline.After(now) {
		// "0s" promises the end at once; the sweep would come only
		// within its interval. The drain itself is stored, so a failure
		// here is left to that sweep.
		if err := s.sessions.DrainDue(r.Context()); err != nil {
			s.log.Warn("drain: end what runs on the agent", "agent", a.ID, "err", err)
		}
		s.sessions.Mark()
	}
	a, err = s.store.GetAgent(r.Context(), a.ID)
	if err != nil {
		return err
	}
	return s.writeAgent(w, r, a)
}

func (s *Server) drains(ctx context.Context) (map[domain.AgentID]domain.AgentDrain, error) {
	list, err := s.store.ListAgentDrains(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[domain.AgentID]domain.AgentDrain, len(list))
	for _, d := range list {
		out[d.Agent] = d
	}
	return out, nil
}

// withDrain adds the agent's drain progress to its view.
func withDrain(out v1.Agent, a domain.Agent, drains map[domain.AgentID]domain.AgentDrain) v1.Agent {
	d, ok := drains[a.ID]
	if !ok {
		return out
	}
	dr := &v1.AgentDrain{StartedAt: d.Started.UTC(), RemainingKernels: a.KernelCount, Drained: a.KernelCount == 0}
	if !d.Deadline.IsZero() {
		t := d.Deadline.UTC()
		dr.Deadline = &t
	}
	out.Drain = dr
	return out
}
