package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// sokovan job create|ls|show|rm with members joined by session create
// --job: the gang of two starts together, show lists members and history,
// rm ends the members.
func TestCLIJob(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	if r := c.run(alice, "job", "create", "bad", "--min-available", "0"); r.code == 0 || !strings.Contains(r.stderr, "min_available") {
		t.Fatalf("min-available 0: exit %d, stderr %q", r.code, r.stderr)
	}
	out := c.ok(alice, "job", "create", "spark", "--min-available", "2", "--failure-policy", "fail")
	if !strings.Contains(out, "spark  NEW") {
		t.Fatalf("create printed %q", out)
	}
	c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "1", "--mem", "1g", "--job", "spark", "--name", "driver")
	c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "1", "--mem", "1g", "--job", "spark", "--name", "exec", "--wait")
	apitest.Eventually(t, 20*time.Second, "job RUNNING", func() bool {
		var j v1.Job
		m.Do(alice, "GET", "/v1/jobs/spark", nil, &j)
		return j.State == "RUNNING"
	})
	show := c.ok(alice, "job", "show", "spark")
	for _, want := range []string{"state:           RUNNING", "min available:   2 (submitted 2, placed 2)", "driver", "exec",
		"Run      NEW → ACCEPTED"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	if ls := c.ok(alice, "job", "ls"); !strings.Contains(ls, "spark") || !strings.Contains(ls, "RUNNING") {
		t.Errorf("ls:\n%s", ls)
	}
	if out := c.ok(alice, "job", "rm", "spark"); !strings.Contains(out, "FAILING") {
		t.Errorf("rm printed %q", out)
	}
	apitest.Eventually(t, 20*time.Second, "job FAILED", func() bool {
		var j v1.Job
		m.Do(alice, "GET", "/v1/jobs/spark", nil, &j)
		return j.State == "FAILED"
	})
	if r := c.run(alice, "job", "show", "nope"); r.code == 0 {
		t.Fatal("show of a missing job exited 0")
	}
}
