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

// TestCLIRunFlagsBeforeScript: flags may come before the script, as
// sbatch users write them (sbatch --array=0-9 job.sh), valued ones with
// their value as the next argument or after =, and they still win over
// the script's #SOKOVAN lines.
func TestCLIRunFlagsBeforeScript(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p")
	path := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n#SOKOVAN --image sleep --cpu 2 --mem 256m --name sweep\necho $SOKOVAN_ARRAY_INDEX\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok(alice, "run", "--array", "0-2", "--cpu=1", "-o", "json", path)
	var arrays v1.List[v1.Array]
	if code := m.Do(alice, "GET", "/v1/arrays", nil, &arrays); code != 200 || len(arrays.Items) != 1 {
		t.Fatalf("arrays after run --array before the script: %d (%d), want one", len(arrays.Items), code)
	}
	if a := arrays.Items[0]; a.Name != "sweep" || a.Count != 3 {
		t.Errorf("array %q of %d elements, want sweep of 3", a.Name, a.Count)
	}
	var list v1.SessionPage
	if code := m.Do(alice, "GET", "/v1/sessions", nil, &list); code != 200 || len(list.Items) != 3 {
		t.Fatalf("sessions: %d (%d), want the 3 elements", len(list.Items), code)
	}
	if cpu := list.Items[0].RequestedSlots["cpu"]; cpu != "1" {
		t.Errorf("an element asks cpu %s, want the command line's 1 over the script's 2", cpu)
	}
	// Flags and no script: an error that says so, not "open --array".
	if r := c.run(alice, "run", "--array", "0-2"); r.code == 0 || !strings.Contains(r.stderr, "no script to submit") {
		t.Errorf("run with flags and no script: exit %d, stderr %q", r.code, r.stderr)
	}
}
