package sqlite

import (
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// The SQL spells out which statuses hold resources; they must be the
// domain's.
func TestHoldingStatusesMatchDomain(t *testing.T) {
	var kernels, sessions []string
	for _, s := range domain.KernelStatuses() {
		if s.HoldsResources() {
			kernels = append(kernels, "'"+s.String()+"'")
		}
	}
	for _, s := range domain.SessionStatuses() {
		if s.HoldsResources() {
			sessions = append(sessions, "'"+s.String()+"'")
		}
	}
	if want := "(" + strings.Join(kernels, ", ") + ")"; holdingKernelStatuses != want {
		t.Errorf("holdingKernelStatuses = %s, want %s", holdingKernelStatuses, want)
	}
	if want := "(" + strings.Join(sessions, ", ") + ")"; holdingSessionStatuses != want {
		t.Errorf("holdingSessionStatuses = %s, want %s", holdingSessionStatuses, want)
	}
}
