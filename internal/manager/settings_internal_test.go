package manager

import (
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/config"
	"github.com/sokovan-go/sokovan/internal/coordinator"
)

// The shared settings reach the coordinator's job timeouts; a zero one
// keeps what the manager started with.
func TestApplyJobTimeouts(t *testing.T) {
	base := coordinator.Config{JobRetention: time.Hour}
	got, _ := apply(base, config.Settings{JobStartingTimeout: config.Duration(time.Minute),
		JobCompletingTimeout: config.Duration(5 * time.Second)})
	if got.JobStartingTimeout != time.Minute || got.JobCompletingTimeout != 5*time.Second || got.JobRetention != time.Hour {
		t.Fatalf("applied %+v", got)
	}
}
