package domain

import "testing"

func TestAgentMayRun(t *testing.T) {
	t.Parallel()
	process := Agent{Catalog: []string{"exit:*", "http-echo", "sleep"}}
	numbered := Agent{Catalog: []string{"exit:{0-255}", "sleep"}}
	for _, tc := range []struct {
		name  string
		agent Agent
		image string
		want  bool
	}{
		{"no catalog runs anything", Agent{}, "python:3.13", true},
		{"exact name", process, "sleep", true},
		{"pattern", process, "exit:3", true},
		{"pattern's parameter is the runtime's to check", process, "exit:abc", true},
		{"a name is not a prefix", process, "sleeper", false},
		{"number in range", numbered, "exit:255", true},
		{"leading zeros within the digits of hi", numbered, "exit:007", true},
		{"number above the range", numbered, "exit:256", false},
		{"negative", numbered, "exit:-1", false},
		{"no number", numbered, "exit:", false},
		{"too many digits", numbered, "exit:0001", false},
		{"not a number", numbered, "exit:abc", false},
		{"unknown", process, "python:3.13", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.agent.MayRun(tc.image); got != tc.want {
				t.Errorf("MayRun(%q) = %v, want %v", tc.image, got, tc.want)
			}
		})
	}
}
