package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func arrayObj(name, spec string, extra map[string]any) map[string]any {
	s := map[string]any{"image": "sleep", "array": spec, "resources": map[string]any{"cpu": "1"}, "env": map[string]any{"A": "1"}}
	for k, v := range extra {
		s[k] = v
	}
	return sessionObj(name, s)
}

// A Session object with spec.array is an array, named by the object:
// applied once it makes the array and its elements; applied again, with
// its indexes spelled either way, it is unchanged and writes nothing; a
// changed index spec or element spec is refused at its field.
func TestApplyArray(t *testing.T) {
	t.Parallel()
	engines(t, testApplyArray)
}

func testApplyArray(t *testing.T, engine string) {
	m := apitest.New(t, apitest.Options{Manual: true, Engine: engine})
	alice := m.User("alice", "user", "p1")
	before := everything(t, m)
	var first v1.Apply
	if code := m.Do(alice, "POST", "/v1/apply", applyBody(arrayObj("sweep", "0-2", nil)), &first); code != http.StatusOK {
		t.Fatalf("first apply: %d", code)
	}
	it := first.Items[0]
	if it.Kind != "Session" || it.Action != "created" || it.Array != "0-2" || it.Count != 3 {
		t.Fatalf("first apply: %+v, want a created array of 3", it)
	}
	var list v1.List[v1.Array]
	if m.Do(alice, "GET", "/v1/arrays", nil, &list); len(list.Items) != 1 || list.Items[0].ID != it.ID ||
		list.Items[0].Name != "sweep" || list.Items[0].Count != 3 || list.Items[0].Spec != "0-2" {
		t.Fatalf("arrays after apply: %+v; want sweep of 3 as %s", list.Items, it.ID)
	}
	if after := everything(t, m); after[0] != before[0]+3 {
		t.Fatalf("apply made %d sessions, want the 3 elements", after[0]-before[0])
	}
	el := get(t, m, alice, "sweep%5B2%5D")
	if el.Env["A"] != "1" || el.Env["SOKOVAN_ARRAY_INDEX"] != "2" || el.Array != it.ID {
		t.Fatalf("sweep[2]: array %s env %v", el.Array, el.Env)
	}

	before = everything(t, m)
	changes, _ := m.Store.LastChange(context.Background())
	for _, spec := range []string{"0-2", "0,1,2"} {
		var again v1.Apply
		if code := m.Do(alice, "POST", "/v1/apply", applyBody(arrayObj("sweep", spec, nil)), &again); code != http.StatusOK ||
			again.Items[0].Action != "unchanged" || again.Items[0].ID != it.ID {
			t.Errorf("apply again as %q: %d %+v, want unchanged %s", spec, code, again.Items, it.ID)
		}
	}
	after := everything(t, m)
	changes2, _ := m.Store.LastChange(context.Background())
	if after != before || changes2 != changes {
		t.Errorf("applying again wrote: %v → %v, change feed %d → %d", before, after, changes, changes2)
	}

	for _, c := range []struct {
		name  string
		obj   map[string]any
		field string
	}{
		{"indexes", arrayObj("sweep", "0-3", nil), "objects[0].spec.array"},
		{"cap", arrayObj("sweep", "0-2%1", nil), "objects[0].spec.array"},
		{"element spec", arrayObj("sweep", "0-2", map[string]any{"priority": 20}), "objects[0].spec.priority"},
		{"element env", arrayObj("sweep", "0-2", map[string]any{"env": map[string]any{"A": "2"}}), "objects[0].spec.env"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e v1.ErrorResponse
			code := m.Do(alice, "POST", "/v1/apply", applyBody(c.obj), &e)
			if code != http.StatusConflict || e.Error.Field != c.field || !strings.Contains(e.Error.Message, "session rm") {
				t.Errorf("changed %s: %d %q %q, want 409 at %s", c.name, code, e.Error.Field, e.Error.Message, c.field)
			}
			if got := everything(t, m); got != before {
				t.Errorf("refused apply wrote: %v → %v", before, got)
			}
		})
	}
}

// An array where it cannot be is refused at its field and writes
// nothing: in a job, as a job's member, under a name a live session
// has, and a session under a name a live array has, since a name is one
// live session or one live array.
func TestApplyArrayRefusals(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	if code := m.Do(alice, "POST", "/v1/apply", applyBody(sessionObj("plain", map[string]any{"image": "sleep"}),
		arrayObj("grid", "0-1", nil)), nil); code != http.StatusOK {
		t.Fatalf("setup: %d", code)
	}
	for _, c := range []struct {
		name  string
		body  map[string]any
		code  int
		field string
	}{
		{"job member", applyBody(map[string]any{"kind": "Job", "name": "j", "spec": map[string]any{},
			"members": []any{map[string]any{"name": "m", "spec": map[string]any{"image": "sleep", "array": "0-3"}}}}),
			400, "objects[0].members[0].spec.array"},
		{"array in a job", applyBody(map[string]any{"kind": "Job", "name": "j", "spec": map[string]any{}},
			arrayObj("a", "0-3", map[string]any{"job": "j"})), 400, "objects[1].spec.job"},
		{"bad indexes", applyBody(arrayObj("a", "5-1", nil)), 400, "objects[0].spec.array"},
		{"name of a live session", applyBody(arrayObj("plain", "0-1", nil)), 409, "objects[0].spec.array"},
		{"session named as a live array", applyBody(sessionObj("grid", map[string]any{"image": "sleep"})), 409,
			"objects[0].spec.array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := everything(t, m)
			var e v1.ErrorResponse
			if code := m.Do(alice, "POST", "/v1/apply", c.body, &e); code != c.code || e.Error.Field != c.field {
				t.Errorf("got %d at %q (%s), want %d at %s", code, e.Error.Field, e.Error.Message, c.code, c.field)
			}
			if after := everything(t, m); after != before {
				t.Errorf("refused apply wrote: %v → %v", before, after)
			}
		})
	}
}

// A dry run of a new array writes nothing and says, element by element,
// what each would wait for: past the cap (%2) the array's own blocker.
func TestApplyArrayDryRun(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true, Agents: 1, Estimate: true})
	alice := m.User("alice", "user", "p1")
	before := everything(t, m)
	changes, _ := m.Store.LastChange(context.Background())
	var out v1.Apply
	if code := m.Do(alice, "POST", "/v1/apply?dry_run=true", applyBody(arrayObj("sweep", "0-3%2", nil)), &out); code != http.StatusOK {
		t.Fatalf("dry run: %d", code)
	}
	if after := everything(t, m); after != before {
		t.Errorf("dry run wrote: %v → %v", before, after)
	}
	if c, _ := m.Store.LastChange(context.Background()); c != changes {
		t.Errorf("dry run moved the change feed: %d → %d", changes, c)
	}
	var list v1.List[v1.Array]
	if m.Do(alice, "GET", "/v1/arrays", nil, &list); len(list.Items) != 0 {
		t.Errorf("dry run made arrays: %+v", list.Items)
	}
	it := out.Items[0]
	if !out.DryRun || it.Action != "created" || it.Array != "0-3%2" || it.Count != 4 || len(it.Elements) != 4 {
		t.Fatalf("dry run: %+v", out)
	}
	for k, e := range it.Elements {
		want := "starts now"
		if k >= 2 {
			want = "waits: array sweep: 2 of 2 elements running (%2)"
		}
		if e.Index != k || !strings.HasPrefix(e.Wait, want) || e.EstimatedStart == nil {
			t.Fatalf("element %d: %+v, want index %d, %q and an estimate", k, e, k, want)
		}
	}
	// The estimate holds the cap as the round does: an element past it
	// starts when one of the first two ends, after them, not beside them.
	for _, k := range []int{2, 3} {
		e := it.Elements[k]
		for _, first := range it.Elements[:2] {
			if !e.EstimatedStart.After(*first.EstimatedStart) {
				t.Errorf("element %d, held by the cap, is estimated to start at %v, not after element %d's %v",
					k, e.EstimatedStart, first.Index, first.EstimatedStart)
			}
		}
	}
	if it.Wait != it.Elements[0].Wait || it.EstimatedStart == nil || !it.EstimatedStart.Equal(*it.Elements[0].EstimatedStart) {
		t.Errorf("the item's wait %q (estimate %v) is not its first element's", it.Wait, it.EstimatedStart)
	}
}
