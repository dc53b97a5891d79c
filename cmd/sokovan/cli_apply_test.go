package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/store"
)

const applyYAML = `# a session, a job of two and a deployment
kind: Session
name: train
spec:
  image: sleep
  type: batch
  resources:
    cpu: 1
    mem: 1g
  env:
    EPOCHS: 3
---
kind: Job
name: gang
spec:
  min_available: 2
members:
  - name: w0
    spec: {image: sleep, type: batch}
  - name: w1
    spec:
      image: sleep
      type: batch
      depends_on: [train]
---
kind: Deployment
name: web
spec:
  image: http-echo
  replicas: 1
`

// writeApplyFile writes a file in a fresh directory and returns its path.
func writeApplyFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// counts is what apply may write: sessions, jobs, deployments, and the
// change feed's head.
func counts(t *testing.T, m *apitest.Manager) [4]int64 {
	t.Helper()
	ctx := context.Background()
	ss, err := m.Store.ListSessions(ctx, store.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := m.Store.ListJobs(ctx, store.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := m.Store.ListDeployments(ctx, store.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	last, err := m.Store.LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return [4]int64{int64(len(ss)), int64(len(js)), int64(len(ds)), last}
}

// sokovan apply -f creates what the file holds; applying it again says
// unchanged for every object and writes nothing.
func TestCLIApplyTwice(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	f := writeApplyFile(t, t.TempDir(), "all.yaml", applyYAML)
	out := c.ok(alice, "apply", "-f", f)
	for _, want := range []string{"session/train created", "job/gang created", "session/w0 (job gang) created",
		"session/w1 (job gang) created", "deployment/web created"} {
		if !strings.Contains(out, want) {
			t.Errorf("first apply lacks %q:\n%s", want, out)
		}
	}
	var train v1.Session
	m.Do(alice, "GET", "/v1/sessions/train", nil, &train)
	if train.RequestedSlots["cpu"] != "1" || train.Env["EPOCHS"] != "3" {
		t.Errorf("train asks for %v with env %v; want cpu 1 and EPOCHS 3 (plain YAML numbers taken as text)", train.RequestedSlots, train.Env)
	}
	before := counts(t, m)
	out = c.ok(alice, "apply", "-f", f)
	if strings.Count(out, " unchanged") != 5 || strings.Contains(out, "created") {
		t.Errorf("second apply:\n%s", out)
	}
	if after := counts(t, m); after != before {
		t.Errorf("second apply wrote: %v → %v", before, after)
	}
}

// --dry-run writes nothing and says where each new session would wait
// and when it is estimated to start.
func TestCLIApplyDryRun(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true, Agents: 1, Estimate: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	dir := t.TempDir()
	writeApplyFile(t, dir, "a.yaml", "kind: Session\nname: first\nspec: {image: sleep, type: batch, time_limit: 2h, resources: {cpu: 6, mem: 1g}}\n")
	writeApplyFile(t, dir, "b.json", `[{"kind": "Session", "name": "second", "spec": {"image": "sleep", "type": "batch", "resources": {"cpu": "6", "mem": "1g"}}}]`)
	before := counts(t, m)
	out := c.ok(alice, "apply", "-f", dir, "--dry-run")
	if after := counts(t, m); after != before {
		t.Errorf("dry run wrote: %v → %v", before, after)
	}
	for _, want := range []string{"dry run: nothing was written", "session/first would be created\n  starts now",
		"session/second would be created\n  waits: ", "estimated start: "} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "estimated start: none") {
		t.Errorf("a session without an estimate:\n%s", out)
	}
}

// A refusal names the file, the line, the object and the field, exits
// non-zero, and writes nothing, even for the objects before it.
func TestCLIApplyErrorNamesFileLineObjectField(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"bad quantity", "kind: Session\nname: ok\nspec: {image: sleep}\n---\nkind: Session\nname: bad\nspec:\n  image: sleep\n  resources:\n    mem: lots\n",
			`bad quantity.yaml:10: Session "bad": spec.resources.mem: `},
		{"unknown field", "- kind: Deployment\n  name: web\n  spec:\n    image: http-echo\n    replica: 2\n",
			`unknown field.yaml:5: Deployment "web": spec.replica: unknown field "replica"`},
		{"member", "kind: Job\nname: j\nspec: {}\nmembers:\n- name: m\n  spec:\n    image: sleep\n    cluster_size: 0\n",
			`member.yaml:8: Job "j": members[0].spec.cluster_size: must be 1 to`},
		{"kind", "kind: Pod\nname: p\nspec: {}\n", `kind.yaml:1: Pod "p": kind: must be Session, Job or Deployment`},
		{"syntax", "kind: Session\nname: x\n  spec: {}\n", `syntax.yaml:3: mapping values are not allowed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeApplyFile(t, dir, tc.name+".yaml", tc.body)
			before := counts(t, m)
			r := c.run(alice, "apply", "-f", f)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want non-zero and %q", r.code, r.stderr, tc.want)
			}
			if after := counts(t, m); after != before {
				t.Errorf("refused apply wrote: %v → %v", before, after)
			}
		})
	}
}

// sokovan get KIND NAME -o yaml writes a file that applies unchanged, for
// every kind; a changed deployment rolls out, a changed session is
// refused with what to do.
func TestCLIGetRoundTrip(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	dir := t.TempDir()
	c.ok(alice, "apply", "-f", writeApplyFile(t, dir, "all.yaml", applyYAML))
	for _, obj := range []struct{ kind, name string }{{"session", "train"}, {"session", "w1"}, {"job", "gang"}, {"deployment", "web"}} {
		for _, format := range []string{"yaml", "json"} {
			got := c.ok(alice, "get", obj.kind, obj.name, "-o", format)
			f := writeApplyFile(t, dir, obj.kind+"-"+obj.name+"."+format, got)
			before := counts(t, m)
			out := c.ok(alice, "apply", "-f", f)
			if strings.Contains(out, "created") || strings.Contains(out, "updated") || !strings.Contains(out, obj.kind+"/"+obj.name+" unchanged") {
				t.Errorf("%s %s -o %s applied as:\n%s\nfrom:\n%s", obj.kind, obj.name, format, out, got)
			}
			if after := counts(t, m); after != before {
				t.Errorf("%s %s -o %s: apply wrote: %v → %v", obj.kind, obj.name, format, before, after)
			}
		}
	}
	web := c.ok(alice, "get", "deployment", "web")
	if first, _, _ := strings.Cut(web, "\n"); first != "# yaml-language-server: $schema="+m.URL+"/v1/apply/schema.json" {
		t.Errorf("get -o yaml begins %q, not the schema's line", first)
	}
	changed := strings.Replace(web, "image: http-echo", "image: http-echo\n  env:\n    VERSION: \"2\"", 1)
	out := c.ok(alice, "apply", "-f", writeApplyFile(t, dir, "web2.yaml", changed))
	if !strings.Contains(out, "deployment/web updated (env)") {
		t.Errorf("changed deployment applied as:\n%s\nfrom:\n%s", out, changed)
	}
	var d v1.Deployment
	m.Do(alice, "GET", "/v1/deployments/web", nil, &d)
	if d.Revision != 2 {
		t.Errorf("deployment at revision %d after a changed spec, want 2 (a rollout)", d.Revision)
	}
	train := c.ok(alice, "get", "session", "train")
	r := c.run(alice, "apply", "-f", writeApplyFile(t, dir, "train2.yaml", strings.Replace(train, "image: sleep", "image: exit:0", 1)))
	if r.code == 0 || !strings.Contains(r.stderr, `Session "train": spec.image: `) || !strings.Contains(r.stderr, "sokovan session rm") {
		t.Errorf("changed session: exit %d, stderr %q", r.code, r.stderr)
	}
}

// An array applies as a Session with spec.array: created once, then
// unchanged; `get session NAME` (or `get array NAME`) of it writes a file
// that applies unchanged, without the variables each element gets of
// its own; an element is refused, pointing at the array; a job member
// with an array is refused at its file and line; a dry run sums up the
// elements.
func TestCLIApplyArray(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true, Agents: 1, Estimate: true})
	c := newCLI(t, m)
	alice := m.User("alice", "user", "p1")
	dir := t.TempDir()
	f := writeApplyFile(t, dir, "sweep.yaml", "kind: Session\nname: sweep\nspec:\n  image: sleep\n  array: 0-2\n  resources: {cpu: 1, mem: 1g}\n  env: {LR: 0.1}\n")
	if out := c.ok(alice, "apply", "-f", f); !strings.Contains(out, "session/sweep created (array 0-2: 3 elements)") {
		t.Errorf("apply printed %q", out)
	}
	var a v1.Array
	if code := m.Do(alice, "GET", "/v1/arrays/sweep", nil, &a); code != 200 || a.Count != 3 {
		t.Fatalf("array sweep: %d %+v", code, a)
	}
	if out := c.ok(alice, "apply", "-f", f); !strings.Contains(out, "session/sweep unchanged (array 0-2: 3 elements)") {
		t.Errorf("apply again printed %q", out)
	}
	for _, args := range [][]string{{"session", "sweep", "-o", "yaml"}, {"session", "sweep", "-o", "json"}, {"array", "sweep"}} {
		got := c.ok(alice, append([]string{"get"}, args...)...)
		if strings.Contains(got, "SOKOVAN_") || !strings.Contains(got, "0-2") || !strings.Contains(got, "LR") {
			t.Errorf("get %v wrote:\n%s", args, got)
		}
		ext := "yaml"
		if args[len(args)-1] == "json" {
			ext = "json"
		}
		before := counts(t, m)
		out := c.ok(alice, "apply", "-f", writeApplyFile(t, dir, "got."+ext, got))
		if !strings.Contains(out, "session/sweep unchanged") {
			t.Errorf("get %v applied as:\n%s\nfrom:\n%s", args, out, got)
		}
		if after := counts(t, m); after != before {
			t.Errorf("get %v: apply wrote: %v → %v", args, before, after)
		}
	}
	r := c.run(alice, "get", "session", "sweep[1]")
	if r.code == 0 || !strings.Contains(r.stderr, "sweep[1] is an element of array sweep") ||
		!strings.Contains(r.stderr, "sokovan get session sweep") {
		t.Errorf("get of an element: exit %d, stderr %q", r.code, r.stderr)
	}
	member := writeApplyFile(t, dir, "member.yaml", "kind: Job\nname: j\nspec: {}\nmembers:\n- name: m\n  spec:\n    image: sleep\n    array: 0-3\n")
	before := counts(t, m)
	if r := c.run(alice, "apply", "-f", member); r.code == 0 || !strings.Contains(r.stderr, `member.yaml:8: Job "j": members[0].spec.array: `) {
		t.Errorf("job member with an array: exit %d, stderr %q", r.code, r.stderr)
	}
	if after := counts(t, m); after != before {
		t.Errorf("refused apply wrote: %v → %v", before, after)
	}
	grid := writeApplyFile(t, dir, "grid.yaml", "kind: Session\nname: grid\nspec: {image: sleep, array: 0-3%2, resources: {cpu: 1, mem: 1g}}\n")
	out := c.ok(alice, "apply", "-f", grid, "--dry-run")
	for _, want := range []string{"session/grid would be created (array 0-3%2: 4 elements)", "grid[0], the first element: starts now",
		"2 of 4 elements would start now; the last, grid[3], is estimated to start "} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if after := counts(t, m); after != before {
		t.Errorf("dry run wrote: %v → %v", before, after)
	}
	// grid[3], held by the cap, starts when grid[0] or grid[1] ends: after
	// the first element, not with it.
	first, last := printedTime(t, out, "estimated start: "), printedTime(t, out, "grid[3], is estimated to start ")
	if !last.After(first) {
		t.Errorf("grid[3] is estimated to start at %v, not after grid[0]'s %v:\n%s", last, first, out)
	}
}

// printedTime reads the time the CLI printed (as when writes it) after
// prefix in out.
func printedTime(t *testing.T, out, prefix string) time.Time {
	t.Helper()
	_, rest, ok := strings.Cut(out, prefix)
	if !ok || len(rest) < len(time.DateTime) {
		t.Fatalf("no time after %q in:\n%s", prefix, out)
	}
	at, err := time.ParseInLocation(time.DateTime, rest[:len(time.DateTime)], time.Local)
	if err != nil {
		t.Fatalf("time after %q: %v", prefix, err)
	}
	return at
}
