package domain

import (
	"slices"
	"strings"
	"testing"
)

func seq(from, to, step int) []int {
	var out []int
	for i := from; i <= to; i += step {
		out = append(out, i)
	}
	return out
}

func TestParseArraySpec(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		want    []int
		max     int
		wantErr string
	}{
		{name: "range", spec: "0-9", want: seq(0, 9, 1)},
		{name: "range with cap", spec: "0-99%10", want: seq(0, 99, 1), max: 10},
		{name: "single", spec: "7", want: []int{7}},
		// 1, 3, then 5 7 9 from 5-9:2; cap 4.
		{name: "list and step", spec: "1,3,5-9:2%4", want: []int{1, 3, 5, 7, 9}, max: 4},
		{name: "overlap taken once, sorted", spec: "5-7,0,6", want: []int{0, 5, 6, 7}},
		{name: "step past end", spec: "0-10:4", want: []int{0, 4, 8}},
		{name: "largest", spec: "0-9999", want: seq(0, 9999, 1)},
		{name: "backwards", spec: "5-1", wantErr: "backwards"},
		{name: "cap zero", spec: "0-99%0", wantErr: "at least 1"},
		{name: "cap not a number", spec: "0-9%x", wantErr: "at least 1"},
		{name: "too many", spec: "0-10000", wantErr: "more than 10000"},
		{name: "too many by list", spec: "0-5000,6000-11000", wantErr: "more than 10000"},
		{name: "empty", spec: "", wantErr: "no indexes"},
		{name: "only cap", spec: "%5", wantErr: "no indexes"},
		{name: "negative", spec: "-1-5", wantErr: "not an index"},
		{name: "step zero", spec: "0-9:0", wantErr: "step"},
		{name: "step without range", spec: "3:2", wantErr: "needs a range"},
		{name: "empty item", spec: "1,,3", wantErr: "not an index"},
		{name: "index too large", spec: "2000000", wantErr: "not an index"},
		{name: "plus sign", spec: "+3", wantErr: "not an index"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArraySpec(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseArraySpec(%q) error = %v, want one saying %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseArraySpec(%q): %v", tt.spec, err)
			}
			if !slices.Equal(got.Indexes, tt.want) || got.MaxRunning != tt.max {
				t.Errorf("ParseArraySpec(%q) = %v %%%d, want %v %%%d", tt.spec, got.Indexes, got.MaxRunning, tt.want, tt.max)
			}
		})
	}
}

func TestArrayElementName(t *testing.T) {
	name := ArrayElementName("sweep", 7)
	if name != "sweep[7]" {
		t.Fatalf("ArrayElementName = %q, want sweep[7]", name)
	}
	base, i, ok := SplitArrayElementName(name)
	if !ok || base != "sweep" || i != 7 {
		t.Errorf("SplitArrayElementName(%q) = %q %d %v, want sweep 7 true", name, base, i, ok)
	}
	for _, bad := range []string{"sweep", "[7]", "sweep[x]", "sweep[-1]", "sweep[7"} {
		if _, _, ok := SplitArrayElementName(bad); ok {
			t.Errorf("SplitArrayElementName(%q) ok, want not", bad)
		}
	}
}

func TestArraySummaryOutcome(t *testing.T) {
	tests := []struct {
		name     string
		statuses map[SessionStatus]int
		outcomes map[Outcome]int
		want     Outcome
	}{
		{"one still running", map[SessionStatus]int{SessionTerminated: 9, SessionRunning: 1},
			map[Outcome]int{OutcomeSuccess: 9, OutcomeNone: 1}, OutcomeNone},
		{"all succeeded", map[SessionStatus]int{SessionTerminated: 10}, map[Outcome]int{OutcomeSuccess: 10}, OutcomeSuccess},
		{"one failed", map[SessionStatus]int{SessionTerminated: 10}, map[Outcome]int{OutcomeSuccess: 9, OutcomeFailure: 1}, OutcomeFailure},
		{"all cancelled", map[SessionStatus]int{SessionCancelled: 4}, map[Outcome]int{OutcomeCancelled: 4}, OutcomeCancelled},
		{"some cancelled after others ran", map[SessionStatus]int{SessionTerminated: 2, SessionCancelled: 2},
			map[Outcome]int{OutcomeSuccess: 2, OutcomeCancelled: 2}, OutcomeFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ArraySummary{ByStatus: tt.statuses, ByOutcome: tt.outcomes}.Outcome()
			if got != tt.want {
				t.Errorf("Outcome() = %v, want %v", got, tt.want)
			}
		})
	}
}
