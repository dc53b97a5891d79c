package domain

import (
	"testing"
	"time"
)

// A repeat is the same outcome for the same subject and route; when it
// happened and how often do not count, anything else does.
func TestRecordRepeats(t *testing.T) {
	base := DeploymentHistoryEntry{Subject: "d1", Route: "r1", At: time.Unix(1, 0), Cause: HandlerHealthCheckRoute,
		Result: RouteFailure, From: "HEALTHY", To: "UNHEALTHY", Message: "refused", Attempt: 1}
	later := base
	later.At, later.Attempt = time.Unix(9, 0), 4
	if !later.Repeats(base) {
		t.Errorf("the same outcome later is not a repeat")
	}
	for name, change := range map[string]func(*DeploymentHistoryEntry){
		"subject": func(e *DeploymentHistoryEntry) { e.Subject = "d2" },
		"route":   func(e *DeploymentHistoryEntry) { e.Route = "" },
		"cause":   func(e *DeploymentHistoryEntry) { e.Cause = HandlerRunningRoute },
		"result":  func(e *DeploymentHistoryEntry) { e.Result = RouteSuccess },
		"from":    func(e *DeploymentHistoryEntry) { e.From = "DEGRADED" },
		"to":      func(e *DeploymentHistoryEntry) { e.To = "HEALTHY" },
		"message": func(e *DeploymentHistoryEntry) { e.Message = "timeout" },
	} {
		other := base
		change(&other)
		if other.Repeats(base) {
			t.Errorf("an entry with another %s is taken for a repeat", name)
		}
	}
}
