package main

import (
	"reflect"
	"strings"
	"testing"
)

// parseFile reads YAML documents, lists and JSON arrays into the API's
// objects, with each field's line; YAML's plain numbers become text only
// where the API wants text, and JSON stays as written.
func TestParseFile(t *testing.T) {
	t.Parallel()
	yaml := "kind: Session\nname: a\nspec:\n  image: sleep\n  cluster_size: 2\n  resources:\n    cpu: 2\n    mem: \"1\"\n  env: {DEBUG: true}\n---\n---\n- kind: Job\n  name: j\n  spec: {min_available: 3}\n"
	objs, err := parseFile("f.yaml", []byte(yaml), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("got %d objects, want 2", len(objs))
	}
	spec := objs[0].value["spec"].(map[string]any)
	want := map[string]any{"image": "sleep", "cluster_size": 2, "resources": map[string]any{"cpu": "2", "mem": "1"},
		"env": map[string]any{"DEBUG": "true"}}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("spec %#v, want %#v", spec, want)
	}
	for path, line := range map[string]int{"": 1, "spec": 3, "spec.resources.cpu": 7, "spec.env.DEBUG": 9} {
		if got := objs[0].line(path); got != line {
			t.Errorf("line of %q: %d, want %d", path, got, line)
		}
	}
	if got := objs[0].line("spec.resources.gpu"); got != 6 {
		t.Errorf("line of a field not in the file: %d, want its parent's (6)", got)
	}
	if got := objs[1].line("spec.min_available"); got != 14 {
		t.Errorf("line in the list's object: %d, want 14", got)
	}

	objs, err = parseFile("f.json", []byte(`[{"kind": "Session", "name": "a", "spec": {"resources": {"cpu": 2}}}]`), true)
	if err != nil {
		t.Fatal(err)
	}
	if cpu := objs[0].value["spec"].(map[string]any)["resources"].(map[string]any)["cpu"]; cpu != 2 {
		t.Errorf("JSON's number became %#v; it is the API's to refuse", cpu)
	}

	for _, c := range []struct{ name, body, want string }{
		{"twice", "kind: Session\nname: a\nname: b\n", "f.yaml:3: name is given twice"},
		{"scalar", "just text\n", "f.yaml:1: an object"},
		{"list of text", "- a\n", "f.yaml:1: an object (kind, name, spec) is expected"},
		{"syntax", "kind: [\n", "f.yaml:"},
	} {
		if _, err := parseFile("f.yaml", []byte(c.body), false); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q…", c.name, err, c.want)
		}
	}
}
