package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func arrayBody(name, spec string) map[string]any {
	return map[string]any{"name": name, "image": "sleep", "array": spec, "resources": map[string]string{"cpu": "1"}}
}

// An array of 6 capped at 2 through the API: one request makes six
// sessions named sweep[i]; two run and the rest wait with the array's
// blocker; one DELETE ends them all.
func TestArraysThroughAPI(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p1")
		var a v1.Array
		if code := m.Do(alice, "POST", "/v1/arrays", arrayBody("sweep", "0-5%2"), &a); code != http.StatusCreated ||
			a.Count != 6 || a.MaxRunning != 2 || a.Spec != "0-5%2" || a.Statuses["PENDING"] != 6 || a.Live != 6 {
			t.Fatalf("create array: %d %+v", code, a)
		}
		getArray := func() v1.Array {
			var got v1.Array
			if code := m.Do(alice, "GET", "/v1/arrays/sweep", nil, &got); code != http.StatusOK {
				t.Fatalf("get array by name: %d", code)
			}
			return got
		}
		apitest.Eventually(t, 20*time.Second, "two elements running", func() bool { return getArray().Statuses["RUNNING"] == 2 })
		got := getArray()
		if len(got.Elements) != 6 || got.Elements[4].Name != "sweep[4]" || got.Elements[4].Index != 4 {
			t.Fatalf("elements: %+v", got.Elements)
		}
		// The cap holds: nothing more than two holds resources.
		if got.Statuses["PENDING"] != 4 {
			t.Fatalf("statuses %v, want 2 RUNNING and 4 PENDING", got.Statuses)
		}
		// name[i] names one element, in every session route.
		el := get(t, m, alice, url.PathEscape("sweep[5]"))
		if el.Array != a.ID || el.ArrayIndex == nil || *el.ArrayIndex != 5 || el.Env["SOKOVAN_ARRAY_INDEX"] != "5" ||
			el.Env["SOKOVAN_ARRAY_COUNT"] != "6" {
			t.Fatalf("sweep[5]: %+v", el)
		}
		if el.Status == "PENDING" {
			var why v1.Why
			m.Do(alice, "GET", "/v1/sessions/"+url.PathEscape("sweep[5]")+"/why", nil, &why)
			if len(why.Blockers) != 1 || why.Blockers[0].Kind != "array" ||
				why.Blockers[0].Message != "array sweep: 2 of 2 elements running (%2)" {
				t.Fatalf("why sweep[5]: %+v", why.Blockers)
			}
		}
		if code := m.Do(bob, "GET", "/v1/arrays/sweep", nil, nil); code != http.StatusNotFound {
			t.Fatalf("bob reads alice's array: %d", code)
		}
		var list v1.List[v1.Array]
		if m.Do(bob, "GET", "/v1/arrays", nil, &list); len(list.Items) != 0 {
			t.Fatalf("bob lists %+v", list.Items)
		}
		if m.Do(alice, "GET", "/v1/arrays", nil, &list); len(list.Items) != 1 || list.Items[0].Elements != nil {
			t.Fatalf("alice lists %+v", list.Items)
		}

		var removed v1.ArrayRemoved
		if code := m.Do(alice, "DELETE", "/v1/arrays/sweep", nil, &removed); code != http.StatusAccepted || removed.Ended != 6 {
			t.Fatalf("remove array: %d %+v", code, removed)
		}
		apitest.Eventually(t, 20*time.Second, "every element ended", func() bool { return getArray().Live == 0 })
		if got := getArray(); got.Outcome != "failure" || got.Outcomes["cancelled"] != 4 {
			t.Fatalf("ended array: outcome %q, outcomes %v; want failure with 4 cancelled", got.Outcome, got.Outcomes)
		}
		if code := m.Do(alice, "DELETE", "/v1/arrays/"+a.ID, nil, nil); code != http.StatusConflict {
			t.Fatalf("removing an ended array: %d, want 409", code)
		}
		// The name is free again.
		if code := m.Do(alice, "POST", "/v1/arrays", arrayBody("sweep", "0-1"), nil); code != http.StatusCreated {
			t.Fatalf("the name again: %d", code)
		}
	})
}

// A refused array names the field at fault and stores nothing.
func TestArrayRefusals(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	alice := m.User("alice", "user", "p1")
	taken := create(t, m, alice, map[string]any{"name": "taken", "image": "sleep"})
	// Running, so nothing else moves the change feed while the rows run.
	waitStatus(t, m, alice, taken.ID, "RUNNING")
	tests := []struct {
		name  string
		path  string
		body  map[string]any
		code  int
		field string
	}{
		{"backwards range", "/v1/arrays", arrayBody("a", "5-1"), 400, "array"},
		{"cap zero", "/v1/arrays", arrayBody("a", "0-99%0"), 400, "array"},
		{"too many elements", "/v1/arrays", arrayBody("a", "0-10000"), 400, "array"},
		{"no spec", "/v1/arrays", arrayBody("a", ""), 400, "array"},
		{"no name", "/v1/arrays", arrayBody("", "0-3"), 400, "name"},
		{"a bad session field", "/v1/arrays", map[string]any{"name": "a", "image": "", "array": "0-3"}, 400, "image"},
		{"a name taken by a session", "/v1/arrays", arrayBody("taken", "0-3"), 409, "name"},
		{"an array on the session route", "/v1/sessions", arrayBody("a", "0-3"), 400, "array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := stored(t, m)
			var e v1.ErrorResponse
			if code := m.Do(alice, "POST", tt.path, tt.body, &e); code != tt.code || e.Error.Field != tt.field {
				t.Fatalf("got %d at %q (%s), want %d at %q", code, e.Error.Field, e.Error.Message, tt.code, tt.field)
			}
			if after := stored(t, m); after != before {
				t.Errorf("stored %+v after, %+v before", after, before)
			}
		})
	}
}

// A session that depends on an array by its name is refused with a 400
// that says the name is an array's and which element names would do,
// not that no session has the name; an element's name is a dependency
// like any session's.
func TestDependingOnAnArraySaysItIsOne(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	alice := m.User("alice", "user", "p1")
	if code := m.Do(alice, "POST", "/v1/arrays", arrayBody("sweep", "3-5"), nil); code != http.StatusCreated {
		t.Fatalf("create array: %d", code)
	}
	body := map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}, "depends_on": []string{"sweep"}}
	var e v1.ErrorResponse
	if code := m.Do(alice, "POST", "/v1/sessions", body, &e); code != http.StatusBadRequest || e.Error.Field != "depends_on[0]" ||
		!strings.Contains(e.Error.Message, "is an array") || !strings.Contains(e.Error.Message, "sweep[3]") {
		t.Fatalf("depends on an array: %d %+v, want 400 at depends_on[0] saying it is an array and naming sweep[3]", code, e.Error)
	}
	body["depends_on"] = []string{"sweep[4]"}
	if code := m.Do(alice, "POST", "/v1/sessions", body, nil); code != http.StatusCreated {
		t.Fatalf("depends on an element: %d, want 201", code)
	}
}
