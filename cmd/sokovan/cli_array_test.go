package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestCLIArray: `session create --array` submits an array in one call;
// ls folds it into one row, why on the array says what holds its first
// PENDING element (the %N cap), show and why take name[i], rm of the
// name ends every element; a bad spec exits non-zero creating nothing.
func TestCLIArray(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	for _, bad := range []string{"5-1", "0-99%0", "0-10000"} {
		r := c.run(alice, "session", "create", "--image", "sleep", "--name", "bad", "--array", bad)
		if r.code == 0 || !strings.Contains(r.stderr, "array") {
			t.Errorf("--array %s: exit %d, stderr %q; want non-zero naming array", bad, r.code, r.stderr)
		}
	}
	if r := c.run(alice, "session", "create", "--image", "sleep", "--name", "x", "--array", "0-3", "--wait"); r.code == 0 {
		t.Errorf("--array with --wait exited 0")
	}
	var list v1.SessionPage
	if m.Do(alice, "GET", "/v1/sessions", nil, &list); len(list.Items) != 0 {
		t.Fatalf("refused arrays created %d sessions", len(list.Items))
	}

	out := c.ok(alice, "session", "create", "--image", "sleep", "--cpu", "1", "--mem", "1g", "--name", "sweep", "--array", "0-5%2")
	// The counts are as the reply found them: the scheduler may already
	// have placed the first two.
	if !strings.Contains(out, "array sweep: 6 elements, at most 2 at once (%2): ") {
		t.Fatalf("create printed %q", out)
	}
	apitest.Eventually(t, 20*time.Second, "two elements running", func() bool {
		var a v1.Array
		m.Do(alice, "GET", "/v1/arrays/sweep", nil, &a)
		return a.Statuses["RUNNING"] == 2
	})
	ls := c.ok(alice, "session", "ls")
	if !strings.Contains(ls, "sweep[0-5]") || !strings.Contains(ls, "4 PENDING, 2 RUNNING") || strings.Contains(ls, "sweep[3]") {
		t.Errorf("ls does not fold the array into one row:\n%s", ls)
	}
	if els := c.ok(alice, "session", "ls", "--elements"); !strings.Contains(els, "sweep[3]") {
		t.Errorf("ls --elements lacks sweep[3]:\n%s", els)
	}
	why := c.ok(alice, "session", "why", "sweep")
	for _, want := range []string{"array sweep: 6 elements", "sweep[2], the first PENDING element",
		"array sweep: 2 of 2 elements running (%2)"} {
		if !strings.Contains(why, want) {
			t.Errorf("why sweep lacks %q:\n%s", want, why)
		}
	}
	if w := c.ok(alice, "session", "why", "sweep[5]"); !strings.Contains(w, "2 of 2 elements running") {
		t.Errorf("why sweep[5]:\n%s", w)
	}
	if show := c.ok(alice, "session", "show", "sweep[4]"); !strings.Contains(show, "sweep[4]") {
		t.Errorf("show sweep[4]:\n%s", show)
	}
	if show := c.ok(alice, "session", "show", "sweep"); !strings.Contains(show, "0-5%2") || !strings.Contains(show, "sweep[5]") {
		t.Errorf("show sweep:\n%s", show)
	}
	if out := c.ok(alice, "session", "rm", "sweep"); !strings.Contains(out, "ended 6 elements") {
		t.Errorf("rm sweep printed %q", out)
	}
	apitest.Eventually(t, 20*time.Second, "every element ended", func() bool {
		var a v1.Array
		m.Do(alice, "GET", "/v1/arrays/sweep", nil, &a)
		return a.Live == 0
	})
	if r := c.run(alice, "session", "why", "nope"); r.code == 0 || !strings.Contains(r.stderr, "no session") {
		t.Errorf("why of nothing: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestCLIRunArray: a #SOKOVAN --array line makes `sokovan run` submit
// the script as an array.
func TestCLIRunArray(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p")
	path := filepath.Join(t.TempDir(), "grid.sh")
	script := "#!/bin/sh\n#SOKOVAN --image sleep --cpu 1 --mem 256m\n#SOKOVAN --name grid --array 1,3,5-9:2%4\necho $SOKOVAN_ARRAY_INDEX\n"
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	var a v1.Array
	if err := json.Unmarshal([]byte(c.ok(alice, "run", path, "-o", "json")), &a); err != nil {
		t.Fatal(err)
	}
	if a.Name != "grid" || a.Count != 5 || a.MaxRunning != 4 {
		t.Fatalf("run made %+v, want grid of 5 capped at 4", a)
	}
	var el v1.Session
	if code := m.Do(alice, "GET", "/v1/sessions/grid%5B7%5D", nil, &el); code != 200 || el.Type != "batch" ||
		el.Env["SOKOVAN_ARRAY_INDEX"] != "7" || len(el.Command) == 0 {
		t.Fatalf("grid[7]: %d %+v", code, el)
	}
}
