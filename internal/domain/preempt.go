package domain

import (
	"fmt"
	"time"
)

// Preemption is a resource group's priority preemption policy: a waiting
// session of a higher priority band may evict preemptible sessions of
// lower bands when that frees enough for it. Off unless Enabled.
type Preemption struct {
	Enabled bool
	// MinRuntime is how long a session must have run before it may be a
	// victim (0: at once), after KAI's min-runtime: work younger than this
	// is never thrown away.
	MinRuntime time.Duration
	// Budget is the most sessions the group may preempt in any Window
	// (0: no cap).
	Budget int
	// Window is how far back the budget and the no-cycle rule look
	// (0: they look at nothing, so neither guards).
	Window time.Duration
}

// MaxPreemptionWindow bounds a group's window: the store keeps
// preemption records this long and prunes older ones.
const MaxPreemptionWindow = 7 * 24 * time.Hour

// Validate checks the policy's numbers, naming the field that is wrong.
func (p Preemption) Validate() (field string, err error) {
	switch {
	case p.MinRuntime < 0:
		return "preemption.min_runtime", fmt.Errorf("must not be negative, not %s", p.MinRuntime)
	case p.Budget < 0:
		return "preemption.budget", fmt.Errorf("must not be negative, not %d", p.Budget)
	case p.Window < 0 || p.Window > MaxPreemptionWindow:
		return "preemption.window", fmt.Errorf("must be 0 to %s, not %s", MaxPreemptionWindow, p.Window)
	case p.Budget > 0 && p.Window == 0:
		return "preemption.window", fmt.Errorf("a budget needs a window to count it in")
	}
	return "", nil
}

// DefaultPreemptible is whether a session of type t may be preempted when
// it does not say: batch work can be stopped and run again, a person's
// interactive session and a deployment's inference replica cannot.
func DefaultPreemptible(t SessionType) bool { return t == TypeBatch }

// PreemptedReason is the status reason of a session preempted by another.
func PreemptedReason(by SessionID) string { return "preempted by " + string(by) }
