package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestCLIRunScript: `sokovan run` submits a script as a batch session's
// command, run by its #! interpreter with the arguments after --, with
// the flags of its #SOKOVAN lines; the command line wins over them, and a
// bad line is refused naming the file and the line, submitting nothing.
func TestCLIRunScript(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p")
	dir := t.TempDir()
	script := "#!/bin/bash\n# trains a model\n#SOKOVAN --image sleep --cpu 2 --mem 256m\n#SOKOVAN --name train --priority 20\n\n" +
		"echo training $1\n#SOKOVAN --cpu 8\n"
	path := filepath.Join(dir, "train.sh")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.ok(alice, "run", path, "--cpu", "1", "-o", "json", "--", "resnet")
	var s v1.Session
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("run -o json: %v\n%s", err, out)
	}
	var got v1.Session
	if code := m.Do(alice, "GET", "/v1/sessions/"+s.ID, nil, &got); code != 200 {
		t.Fatalf("GET the session: %d", code)
	}
	want := []string{"/bin/bash", "-c", script, "train.sh", "resnet"}
	if !slices.Equal(got.Command, want) {
		t.Errorf("command %q, want %q", got.Command, want)
	}
	// --cpu 1 on the line wins over the directive's 2; the --cpu 8 after
	// the script's first command is not a directive.
	if got.Type != "batch" || got.Name != "train" || got.Priority != 20 || got.RequestedSlots["cpu"] != "1" {
		t.Errorf("session type %s, name %q, priority %d, cpu %s; want batch, train, 20, 1",
			got.Type, got.Name, got.Priority, got.RequestedSlots["cpu"])
	}

	bad := filepath.Join(dir, "bad.sh")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\n#SOKOVAN --image sleep\n#SOKOVAN --cpus 2\necho\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.run(alice, "run", bad)
	if r.code == 0 || !strings.Contains(r.stderr, "bad.sh:3: #SOKOVAN: unknown flag: --cpus") {
		t.Errorf("a bad directive: exit %d, stderr %q; want non-zero naming bad.sh:3", r.code, r.stderr)
	}
	var list v1.SessionPage
	if code := m.Do(alice, "GET", "/v1/sessions", nil, &list); code != 200 || len(list.Items) != 1 {
		t.Errorf("sessions after the bad script: %d items (%d), want only the first", len(list.Items), code)
	}
}
