package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// errorOf decodes an error answer.
func errorOf(t *testing.T, raw []byte) v1.Error {
	t.Helper()
	var e v1.ErrorResponse
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("not an error body: %s", raw)
	}
	return e.Error
}

// TestSessionReferences: every session route takes the id, a unique id
// prefix or the name, within what the caller may see.
func TestSessionReferences(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p2")
		train := create(t, m, alice, map[string]any{"image": "sleep", "name": "train"})

		for _, ref := range []string{train.ID, "train", train.ID[:8], train.ID[:6]} {
			for _, suffix := range []string{"", "/why", "/history"} {
				if code, raw := m.Raw(alice, "GET", "/v1/sessions/"+ref+suffix, nil); code != http.StatusOK {
					t.Errorf("alice GET %s%s: %d %s", ref, suffix, code, raw)
				}
			}
			if got := get(t, m, alice, ref); got.ID != train.ID {
				t.Errorf("alice GET %s: session %s, want %s", ref, got.ID, train.ID)
			}
		}
		if code, _ := m.Raw(alice, "GET", "/v1/sessions/"+train.ID[:5], nil); code != http.StatusNotFound {
			t.Errorf("a 5-character prefix: %d, want 404", code)
		}
		if code := m.Do(m.AdminToken, "GET", "/v1/sessions/"+train.ID[:8], nil, nil); code != http.StatusOK {
			t.Errorf("admin by prefix: %d, want 200", code)
		}

		// Another user's session is not matched, by prefix nor name, and
		// the answer is a missing session's.
		_, missing := m.Raw(bob, "GET", "/v1/sessions/ffffffff", nil)
		for _, ref := range []string{"train", train.ID[:8], train.ID} {
			code, raw := m.Raw(bob, "GET", "/v1/sessions/"+ref, nil)
			if code != http.StatusNotFound {
				t.Errorf("bob GET alice's %s: %d, want 404", ref, code)
			}
			if got, want := errorOf(t, raw).Message, strings.ReplaceAll(errorOf(t, missing).Message, "ffffffff", ref); got != want {
				t.Errorf("bob GET alice's %s: %q, want a missing session's %q", ref, got, want)
			}
		}

		// A name is one live session's per owner.
		code, raw := m.Raw(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "name": "train"})
		if e := errorOf(t, raw); code != http.StatusConflict || e.Field != "name" {
			t.Errorf("second live train: %d %+v, want 409 naming name", code, e)
		}
		bobs := create(t, m, bob, map[string]any{"image": "sleep", "name": "train"})
		code, raw = m.Raw(m.AdminToken, "GET", "/v1/sessions/train", nil)
		if msg := errorOf(t, raw).Message; code != http.StatusConflict || !strings.Contains(msg, train.ID) || !strings.Contains(msg, bobs.ID) {
			t.Errorf("admin GET train, two owners: %d %q, want 409 listing both", code, msg)
		}

		// Ending it frees the name; the live session wins over the ended.
		if code := m.Do(alice, "DELETE", "/v1/sessions/train", nil, nil); code != http.StatusAccepted {
			t.Fatalf("DELETE train: %d", code)
		}
		if got := get(t, m, alice, "train"); got.ID != train.ID || got.Status != "CANCELLED" {
			t.Errorf("the only train is the ended one: got %s %s", got.ID, got.Status)
		}
		again := create(t, m, alice, map[string]any{"image": "sleep", "name": "train"})
		if got := get(t, m, alice, "train"); got.ID != again.ID {
			t.Errorf("train after a rerun: %s, want the live %s", got.ID, again.ID)
		}

		// depends_on takes the same references.
		dep := create(t, m, alice, map[string]any{"image": "sleep", "depends_on": []string{"train", train.ID[:8]}})
		got, want := slices.Sorted(slices.Values(dep.DependsOn)), slices.Sorted(slices.Values([]string{again.ID, train.ID}))
		if !slices.Equal(got, want) {
			t.Errorf("depends_on: %v, want %v (stored in id order)", got, want)
		}
		for _, bad := range [][]string{{"nope"}, {"train", again.ID}, {bobs.ID[:8]}} {
			code, raw := m.Raw(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "depends_on": bad})
			if e := errorOf(t, raw); code != http.StatusBadRequest || !strings.HasPrefix(e.Field, "depends_on[") {
				t.Errorf("depends_on %v: %d %+v, want 400 naming the entry", bad, code, e)
			}
		}
	})
}

// TestSessionPrefixAmbiguous: a prefix that starts several ids is refused
// with the candidates.
func TestSessionPrefixAmbiguous(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	tmpl := create(t, m, alice, map[string]any{"image": "sleep"})
	sk, err := m.Store.GetSession(context.Background(), domain.SessionID(tmpl.ID))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"abcdef01-0000-4000-8000-000000000000", "abcdef02-0000-4000-8000-000000000000"} {
		s := sk.Session
		s.ID = domain.SessionID(id)
		k := sk.Kernels[0]
		k.ID, k.SessionID = domain.KernelID(id+"-k0"), s.ID
		if err := m.Store.CreateSession(context.Background(), s, []domain.Kernel{k}); err != nil {
			t.Fatal(err)
		}
	}
	code, raw := m.Raw(alice, "GET", "/v1/sessions/abcdef0", nil)
	if msg := errorOf(t, raw).Message; code != http.StatusConflict || !strings.Contains(msg, "abcdef01-") || !strings.Contains(msg, "abcdef02-") {
		t.Errorf("ambiguous prefix: %d %q, want 409 listing both", code, msg)
	}
	if got := get(t, m, alice, "abcdef02"); got.ID != "abcdef02-0000-4000-8000-000000000000" {
		t.Errorf("longer prefix: %s", got.ID)
	}
}
