package api

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// A CREATING kernel's status reason is the agent's note on why it waits
// (gateway: NoteWaitingKernels), so `why` says a SLURM job is queued.
func TestKernelWaitShowsTheAgentsNote(t *testing.T) {
	tests := []struct {
		name, reason, want string
	}{
		{"queued", "queued in SLURM: Resources",
			"kernel k1 (CREATING): waiting for agent a1 to start it; queued in SLURM: Resources"},
		{"suspended", "suspended in SLURM", "kernel k1 (CREATING): waiting for agent a1 to start it; suspended in SLURM"},
		{"no note", "", "kernel k1 (CREATING): waiting for agent a1 to start it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := domain.Kernel{ID: "k1", Agent: "a1", Status: domain.KernelCreating, StatusReason: tt.reason}
			if got := kernelWait(domain.SessionCreating, k); got != tt.want {
				t.Errorf("kernelWait = %q, want %q", got, tt.want)
			}
		})
	}
}
