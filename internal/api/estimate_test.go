package api_test

import (
	"net/http"
	"net/url"
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

// TestEstimatedStartHoldsArrayCap: why of an element held by its array's
// cap (%2) is estimated to start when a running element's time limit runs
// out, as the scheduler would start it, not at once: the one agent has
// room for every element.
func TestEstimatedStartHoldsArrayCap(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Agents: 1, Estimate: true})
		alice := m.User("alice", "user", "p1")
		body := arrayBody("sweep", "0-3%2")
		body["time_limit"] = "10m"
		if code := m.Do(alice, "POST", "/v1/arrays", body, nil); code != http.StatusCreated {
			t.Fatalf("create array: %d", code)
		}
		first := waitStatus(t, m, alice, url.PathEscape("sweep[0]"), "RUNNING")
		second := waitStatus(t, m, alice, url.PathEscape("sweep[1]"), "RUNNING")
		earliest := first.StatusChangedAt
		if second.StatusChangedAt.Before(earliest) {
			earliest = second.StatusChangedAt
		}
		var why v1.Why
		apitest.Eventually(t, 20*time.Second, "an estimate for sweep[2]", func() bool {
			if code := m.Do(alice, "GET", "/v1/sessions/"+url.PathEscape("sweep[2]")+"/why", nil, &why); code != http.StatusOK {
				t.Fatalf("why: %d", code)
			}
			return why.EstimatedStart != nil
		})
		if len(why.Blockers) != 1 || why.Blockers[0].Kind != "array" {
			t.Errorf("why sweep[2]: blockers %+v, want the array's", why.Blockers)
		}
		want := earliest.Add(10 * time.Minute)
		if d := why.EstimatedStart.Sub(want); d.Abs() > 5*time.Second {
			t.Errorf("sweep[2] estimated to start %v, want about %v (the first running element's limit), off by %v",
				why.EstimatedStart, want, d)
		}
	})
}
