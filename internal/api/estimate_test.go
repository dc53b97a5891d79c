package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestEstimatedStartReadsTimeLimits: the one agent is full with a session
// whose time limit is 10 minutes, so the next one is estimated to start
// when that limit runs out — not after the typical hour of a batch
// session, which is what the replay assumed before it read time limits.
func TestEstimatedStartReadsTimeLimits(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Agents: 1, Estimate: true})
		alice := m.User("alice", "user", "p1")
		full := create(t, m, alice, map[string]any{"image": "sleep", "time_limit": "10m", "resources": map[string]string{"cpu": "8"}})
		running := waitStatus(t, m, alice, full.ID, "RUNNING")
		next := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "8"}})
		var why v1.Why
		apitest.Eventually(t, 20*time.Second, "an estimate for the next session", func() bool {
			if code := m.Do(alice, "GET", "/v1/sessions/"+next.ID+"/why", nil, &why); code != http.StatusOK {
				t.Fatalf("why: %d", code)
			}
			return why.EstimatedStart != nil
		})
		want := running.StatusChangedAt.Add(10 * time.Minute)
		if d := why.EstimatedStart.Sub(want); d.Abs() > 5*time.Second {
			t.Errorf("estimated start %v, want about %v (the running session's limit), off by %v", why.EstimatedStart, want, d)
		}
	})
}
