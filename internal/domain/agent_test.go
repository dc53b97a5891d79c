package domain

import "testing"

func TestAgentMayRun(t *testing.T) {
	t.Parallel()
	process := Agent{Catalog: []string{"exit:*", "http-echo", "sleep"}}
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
		{"unknown", process, "python:3.13", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.agent.MayRun(tc.image); got != tc.want {
				t.Errorf("MayRun(%q) = %v, want %v", tc.image, got, tc.want)
			}
		})
	}
}
