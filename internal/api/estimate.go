package api

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// estimateEvery is how long a group's estimates are reused: a replay costs
// a temporary store and a simulated run, far more than a request should
// pay each time, and the queue moves little in a few seconds.
const estimateEvery = 5 * time.Second

// EstimateFunc says when each pending session of a group is estimated to
// start; a session it leaves out has no estimate. The manager passes
// simulate.Estimator: the API itself imports no coordinator or storage
// engine, which a replay needs.
type EstimateFunc func(ctx context.Context, group string) (map[domain.SessionID]time.Time, error)

// estimates caches each group's estimated starts.
type estimates struct {
	fn EstimateFunc
	mu sync.Mutex
	by map[string]*groupEstimate
}

type groupEstimate struct {
	mu     sync.Mutex
	at     time.Time
	starts map[domain.SessionID]time.Time
}

// estimatedStart returns when the pending session is estimated to start;
// nil when it has no estimate or the manager makes none. Concurrent askers
// for one group share one replay.
func (s *Server) estimatedStart(ctx context.Context, group string, id domain.SessionID) (*time.Time, error) {
	if s.est.fn == nil {
		return nil, nil
	}
	s.est.mu.Lock()
	if s.est.by == nil {
		s.est.by = map[string]*groupEstimate{}
	}
	g, ok := s.est.by[group]
	if !ok {
		g = &groupEstimate{}
		s.est.by[group] = g
	}
	s.est.mu.Unlock()

	g.mu.Lock()
	defer g.mu.Unlock()
	now := s.clock.Now()
	if g.starts == nil || now.Sub(g.at) >= estimateEvery || now.Before(g.at) {
		starts, err := s.est.fn(ctx, group)
		if err != nil {
			return nil, fmt.Errorf("estimate starts in group %s: %w", group, err)
		}
		g.at, g.starts = now, starts
	}
	if t, ok := g.starts[id]; ok {
		return &t, nil
	}
	return nil, nil
}
