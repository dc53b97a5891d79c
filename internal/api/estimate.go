package api

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// A group's estimates are reused for estimateFresh: a replay costs a
// temporary store and a simulated run, far more than a request should pay
// each time, and the queue moves little in a few seconds. Up to
// estimateStale an older estimate is answered at once while a new one is
// made in the background (it is an estimate either way); a replay is cut
// off after estimateTimeout.
const (
	estimateFresh   = 5 * time.Second
	estimateStale   = time.Minute
	estimateTimeout = time.Minute
)

// EstimateFunc says when each pending session of a group is estimated to
// start; a session it leaves out has no estimate. The manager passes
// simulate.Estimator: the API itself imports no coordinator or storage
// engine, which a replay needs.
type EstimateFunc func(ctx context.Context, group string) (map[domain.SessionID]time.Time, error)

// estimatedStart returns when the pending session is estimated to start;
// nil when it has no estimate or the manager makes none. Concurrent askers
// for one group share one replay.
func (s *Server) estimatedStart(ctx context.Context, group string, id domain.SessionID) (*time.Time, error) {
	if s.est.compute == nil {
		return nil, nil
	}
	starts, err := s.est.get(ctx, group, nil)
	if err != nil {
		return nil, fmt.Errorf("estimate starts in group %s: %w", group, err)
	}
	if t, ok := starts[id]; ok {
		return &t, nil
	}
	return nil, nil
}
