package probe

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	s := Spec{SuccessThreshold: 2, FailureThreshold: 2}
	ok := outcome{ok: true}
	bad := outcome{err: errors.New("503")}
	cannot := outcome{err: fmt.Errorf("%w: no such binary", errCannotRun)}
	tests := []struct {
		name string
		seq  []outcome
		want Status
	}{
		{"no check yet stays unknown", nil, Unknown},
		{"one success is below the threshold of 2", []outcome{ok}, Failure},
		{"two successes reach it", []outcome{ok, ok}, Success},
		{"a failure resets the successes", []outcome{ok, bad, ok}, Failure},
		{"one failure is below the failure threshold", []outcome{ok, ok, bad}, Failure},
		{"two failures reach it", []outcome{bad, bad}, FailedThreshold},
		{"recovers after the threshold", []outcome{bad, bad, ok, ok}, Success},
		{"a check that cannot run is unknown", []outcome{ok, ok, cannot}, Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := State{Status: Unknown}
			for _, o := range tt.seq {
				st = next(st, s, o, time.Time{})
			}
			if st.Status != tt.want {
				t.Errorf("status %s, want %s (%+v)", st.Status, tt.want, st)
			}
		})
	}
}

func TestReady(t *testing.T) {
	tests := []struct {
		name   string
		states []State
		want   bool
	}{
		{"no probes is ready", nil, true},
		{"all success", []State{{Status: Success}, {Status: Success}}, true},
		{"one failing", []State{{Status: Success}, {Status: Failure}}, false},
		{"one past its threshold", []State{{Status: Success}, {Status: FailedThreshold}}, false},
		{"one unknown fails safe", []State{{Status: Success}, {Status: Unknown}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Ready(tt.states); got != tt.want {
				t.Errorf("Ready = %v, want %v", got, tt.want)
			}
		})
	}
}
