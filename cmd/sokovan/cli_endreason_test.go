package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// A session that ended says why where users look first: `session show`'s
// Reason and `session why`, for a user's cancel of a running session, its
// time limit and its kernel's failure (issue 32 item 9).
func TestCLIEndReason(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Agents: 1})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p")

	ended := func(id string) string {
		t.Helper()
		var out string
		apitest.Eventually(t, 20*time.Second, id+" ends", func() bool {
			out = c.ok(alice, "session", "show", id)
			return strings.Contains(out, "Status:     TERMINATED")
		})
		return out
	}
	for _, tc := range []struct {
		name   string
		image  string
		create []string
		end    func(id string)
		reason string
	}{
		{name: "cancel", end: func(id string) {
			apitest.Eventually(t, 20*time.Second, id+" runs", func() bool {
				return strings.Contains(c.ok(alice, "session", "show", id), "RUNNING")
			})
			c.ok(alice, "session", "rm", id)
		}, reason: "terminated by alice"},
		{name: "time limit", create: []string{"--time-limit", "1s"}, end: func(string) {}, reason: "time limit"},
		{name: "kernel failure", image: "exit:3", create: []string{"--type", "batch"}, end: func(string) {},
			reason: "kernel main#0 exited with code 3"},
	} {
		image := tc.image
		if image == "" {
			image = "sleep"
		}
		args := append([]string{"session", "create", "--image", image, "--cpu", "0.5", "--mem", "256m"}, tc.create...)
		id := strings.Fields(c.ok(alice, args...))[0]
		tc.end(id)
		show := ended(id)
		if !strings.Contains(show, tc.reason) {
			t.Errorf("%s: show does not give the reason %q:\n%s", tc.name, tc.reason, show)
		}
		why := c.ok(alice, "session", "why", id)
		if !strings.Contains(why, "session ended TERMINATED") || !strings.Contains(why, "(failure)") ||
			!strings.Contains(why, tc.reason) {
			t.Errorf("%s: why does not give status, outcome and reason %q:\n%s", tc.name, tc.reason, why)
		}
	}
}
