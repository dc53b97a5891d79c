package domain

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// named pairs a value with the name the store, the API and history record
// for it. The names are spelled out rather than derived so that renaming a
// status, which would orphan stored rows, fails here.
type named[T any] struct {
	v    T
	name string
}

// checkNames asserts String and the matching parser agree with the
// expected names in both directions, and that the parser rejects the given
// unknown names.
func checkNames[T interface {
	comparable
	fmt.Stringer
}](t *testing.T, want []named[T], parse func(string) (T, error), unknown []string) {
	t.Helper()
	for _, w := range want {
		t.Run(w.name, func(t *testing.T) {
			if got := w.v.String(); got != w.name {
				t.Errorf("String() = %q, want %q", got, w.name)
			}
			got, err := parse(w.name)
			if err != nil {
				t.Fatalf("parse(%q) error: %v", w.name, err)
			}
			if got != w.v {
				t.Errorf("parse(%q) = %v, want %v", w.name, got, w.v)
			}
		})
	}
	for _, name := range unknown {
		t.Run(fmt.Sprintf("unknown %q", name), func(t *testing.T) {
			got, err := parse(name)
			if err == nil {
				t.Errorf("parse(%q) = %v, want error", name, got)
			}
		})
	}
}

func TestSessionStatusNames(t *testing.T) {
	want := []named[SessionStatus]{
		{SessionPending, "PENDING"},
		{SessionScheduled, "SCHEDULED"},
		{SessionPreparing, "PREPARING"},
		{SessionPrepared, "PREPARED"},
		{SessionCreating, "CREATING"},
		{SessionRunning, "RUNNING"},
		{SessionTerminating, "TERMINATING"},
		{SessionTerminated, "TERMINATED"},
		{SessionCancelled, "CANCELLED"},
		{SessionError, "ERROR"},
	}
	checkNames(t, want, ParseSessionStatus, []string{
		"", "pending", "PULLING", "RUNNING ", "BOGUS", "SessionStatus(0)", SessionStatus(0).String(), SessionStatus(99).String(),
	})

	var order []SessionStatus
	for _, w := range want {
		order = append(order, w.v)
	}
	if diff := cmp.Diff(order, SessionStatuses()); diff != "" {
		t.Errorf("SessionStatuses() mismatch (-want +got):\n%s", diff)
	}
}

func TestKernelStatusNames(t *testing.T) {
	want := []named[KernelStatus]{
		{KernelPending, "PENDING"},
		{KernelScheduled, "SCHEDULED"},
		{KernelPreparing, "PREPARING"},
		{KernelPulling, "PULLING"},
		{KernelPrepared, "PREPARED"},
		{KernelCreating, "CREATING"},
		{KernelRunning, "RUNNING"},
		{KernelTerminating, "TERMINATING"},
		{KernelTerminated, "TERMINATED"},
		{KernelCancelled, "CANCELLED"},
		{KernelError, "ERROR"},
	}
	checkNames(t, want, ParseKernelStatus, []string{
		"", "pulling", "Running", "BOGUS", KernelStatus(0).String(), KernelStatus(200).String(),
	})

	var order []KernelStatus
	for _, w := range want {
		order = append(order, w.v)
	}
	if diff := cmp.Diff(order, KernelStatuses()); diff != "" {
		t.Errorf("KernelStatuses() mismatch (-want +got):\n%s", diff)
	}
}

func TestAgentStatusNames(t *testing.T) {
	checkNames(t, []named[AgentStatus]{
		{AgentAlive, "ALIVE"},
		{AgentLost, "LOST"},
		{AgentTerminated, "TERMINATED"},
	}, ParseAgentStatus, []string{"", "alive", "DEAD", AgentStatus(0).String(), AgentStatus(4).String()})
}

func TestGroupStateNames(t *testing.T) {
	checkNames(t, []named[GroupState]{
		{GroupActive, "ACTIVE"},
		{GroupStopped, "STOPPED"},
		{GroupDraining, "DRAINING"},
		{GroupRemoved, "REMOVED"},
	}, ParseGroupState, []string{"", "active", "PAUSED", GroupState(0).String(), GroupState(5).String()})
}

func TestOutcomeNames(t *testing.T) {
	// OutcomeNone is written as the empty string: a session that has not
	// ended stores no outcome.
	checkNames(t, []named[Outcome]{
		{OutcomeNone, ""},
		{OutcomeSuccess, "success"},
		{OutcomeFailure, "failure"},
		{OutcomeCancelled, "cancelled"},
		{OutcomePreempted, "preempted"},
	}, ParseOutcome, []string{"SUCCESS", "none", "canceled", Outcome(5).String()})
}

func TestSessionStatusTerminalAndHoldsResources(t *testing.T) {
	// DESIGN.md invariant 1: SCHEDULED through TERMINATING hold resources;
	// PENDING has none yet and terminal statuses have released theirs.
	tests := []struct {
		s        SessionStatus
		terminal bool
		holds    bool
	}{
		{SessionPending, false, false},
		{SessionScheduled, false, true},
		{SessionPreparing, false, true},
		{SessionPrepared, false, true},
		{SessionCreating, false, true},
		{SessionRunning, false, true},
		{SessionTerminating, false, true},
		{SessionTerminated, true, false},
		{SessionCancelled, true, false},
		{SessionError, true, false},
	}
	if len(tests) != len(SessionStatuses()) {
		t.Fatalf("table covers %d statuses, SessionStatuses() has %d", len(tests), len(SessionStatuses()))
	}
	for _, tt := range tests {
		t.Run(tt.s.String(), func(t *testing.T) {
			if got := tt.s.Terminal(); got != tt.terminal {
				t.Errorf("Terminal() = %v, want %v", got, tt.terminal)
			}
			if got := tt.s.HoldsResources(); got != tt.holds {
				t.Errorf("HoldsResources() = %v, want %v", got, tt.holds)
			}
		})
	}
}

func TestKernelStatusTerminalAndHoldsResources(t *testing.T) {
	tests := []struct {
		s        KernelStatus
		terminal bool
		holds    bool
	}{
		{KernelPending, false, false},
		{KernelScheduled, false, true},
		{KernelPreparing, false, true},
		{KernelPulling, false, true},
		{KernelPrepared, false, true},
		{KernelCreating, false, true},
		{KernelRunning, false, true},
		{KernelTerminating, false, true},
		{KernelTerminated, true, false},
		{KernelCancelled, true, false},
		{KernelError, true, false},
	}
	if len(tests) != len(KernelStatuses()) {
		t.Fatalf("table covers %d statuses, KernelStatuses() has %d", len(tests), len(KernelStatuses()))
	}
	for _, tt := range tests {
		t.Run(tt.s.String(), func(t *testing.T) {
			if got := tt.s.Terminal(); got != tt.terminal {
				t.Errorf("Terminal() = %v, want %v", got, tt.terminal)
			}
			if got := tt.s.HoldsResources(); got != tt.holds {
				t.Errorf("HoldsResources() = %v, want %v", got, tt.holds)
			}
		})
	}
}

func TestInvalidStatusesAreNeitherTerminalNorHolding(t *testing.T) {
	// The zero value means "unset"; treating it as terminal would let a
	// half-written row release resources, and as holding would leak them.
	for _, s := range []SessionStatus{0, SessionError + 1} {
		if s.Terminal() || s.HoldsResources() {
			t.Errorf("%v: Terminal() = %v, HoldsResources() = %v, want false, false", s, s.Terminal(), s.HoldsResources())
		}
	}
	for _, s := range []KernelStatus{0, KernelError + 1} {
		if s.Terminal() || s.HoldsResources() {
			t.Errorf("%v: Terminal() = %v, HoldsResources() = %v, want false, false", s, s.Terminal(), s.HoldsResources())
		}
	}
}
