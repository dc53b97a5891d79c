package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// preemptFlags are `rg set`'s preemption flags; only those given are sent.
type preemptFlags struct {
	enabled            bool
	minRuntime, window string
	budget             int
}

func (p *preemptFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&p.enabled, "preemption", false, "let waiting sessions of higher priority evict preemptible sessions of lower priority")
	f.StringVar(&p.minRuntime, "preempt-min-runtime", "", "how long a session must have run before it may be preempted, such as 10m (0s: at once)")
	f.IntVar(&p.budget, "preempt-budget", 0, "the most sessions preempted per --preempt-window (0: no cap)")
	f.StringVar(&p.window, "preempt-window", "", "the window the budget and the no-cycle rule look back over, such as 1h (0s: none)")
}

// request is the preemption part of a group change; nil when no flag of
// it was given.
func (p *preemptFlags) request(f *pflag.FlagSet) *v1.PreemptionRequest {
	var r v1.PreemptionRequest
	set := false
	if f.Changed("preemption") {
		r.Enabled, set = &p.enabled, true
	}
	if f.Changed("preempt-min-runtime") {
		r.MinRuntime, set = &p.minRuntime, true
	}
	if f.Changed("preempt-budget") {
		r.Budget, set = &p.budget, true
	}
	if f.Changed("preempt-window") {
		r.Window, set = &p.window, true
	}
	if !set {
		return nil
	}
	return &r
}

func printPreemption(w io.Writer, p v1.Preemption) {
	if !p.Enabled {
		fmt.Fprintln(w, "Preemption:    off")
		return
	}
	budget := "no cap"
	if p.Budget > 0 {
		budget = fmt.Sprintf("%d per %s", p.Budget, p.Window)
	}
	fmt.Fprintf(w, "Preemption:    on; min runtime %s, budget %s, window %s\n", p.MinRuntime, budget, p.Window)
}
