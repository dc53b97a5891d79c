package domain

import (
	"errors"
	"testing"
)

// Every (event, from) pair the table lacks is refused; final states take
// no event at all, and each state but the final ones has a way out.
func TestJobStateTable(t *testing.T) {
	events := []JobEvent{JobReject, JobRun, JobComplete, JobFail, JobExpire}
	rows := map[[2]string]JobState{}
	for _, tr := range JobTransitions() {
		k := [2]string{string(tr.Event), tr.From.String()}
		if _, dup := rows[k]; dup {
			t.Fatalf("two rows for %v", k)
		}
		rows[k] = tr.To
	}
	for _, from := range JobStates() {
		out := 0
		for _, e := range events {
			got, err := NextJobState(e, from)
			want, ok := rows[[2]string{string(e), from.String()}]
			switch {
			case ok && (err != nil || got != want):
				t.Errorf("%s from %v = %v, %v; want %v", e, from, got, err, want)
			case !ok && !errors.Is(err, ErrIllegalJobEvent):
				t.Errorf("%s from %v = %v, %v; want ErrIllegalJobEvent", e, from, got, err)
			}
			if ok {
				out++
			}
		}
		if from.Final() != (out == 0) {
			t.Errorf("%v: final %v but %d ways out", from, from.Final(), out)
		}
	}
	// The seed's main line.
	s := JobNew
	for _, step := range []struct {
		e    JobEvent
		want JobState
	}{{JobRun, JobAccepted}, {JobRun, JobStarting}, {JobRun, JobRunning}, {JobComplete, JobCompleting},
		{JobComplete, JobCompleted}, {JobExpire, JobExpired}} {
		next, err := NextJobState(step.e, s)
		if err != nil || next != step.want {
			t.Fatalf("%s from %v = %v, %v; want %v", step.e, s, next, err, step.want)
		}
		s = next
	}
}

func TestJobStateNamesRoundTrip(t *testing.T) {
	for _, s := range JobStates() {
		got, err := ParseJobState(s.String())
		if err != nil || got != s {
			t.Errorf("ParseJobState(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseFailurePolicy("maybe"); err == nil {
		t.Error("ParseFailurePolicy accepted maybe")
	}
}
