package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// FuzzCreateSession throws arbitrary bodies at POST /v1/sessions: the
// answer is never a 5xx, a refusal writes nothing, and an acceptance
// writes exactly one session.
func FuzzCreateSession(f *testing.F) {
	for _, seed := range []string{
		`{"image":"sleep"}`,
		`{"image":"sleep","resources":{"cpu":"1","mem":"1g"},"cluster_size":2,"cluster_mode":"multi-node"}`,
		`{"image":"sleep","resources":{"cpu":"-1"}}`,
		`{"image":"sleep","resources":{"mem":4}}`,
		`{"image":"sleep","resources":{"cpu":"9223372036854775.808"}}`,
		`{"image":"sleep","cluster_size":1e3}`,
		`{"image":"sleep","cluster_size":99999999999999999999}`,
		`{"image":"sleep","priority":-1}`,
		`{"image":"sleep","depends_on":["x","x"]}`,
		`{"image":"sleep","designated_agents":["agent-0"]}`,
		`{"image":"sleep","starts_at":"2026-13-01T00:00:00Z"}`,
		`{"image":"sleep","env":{"A":"\u0000"}}`,
		`{"image":"\u0000"}`,
		`{"image":"sleep","name":"\ud800"}`,
		`{"image":"sleep","resource_group":"default\u0000"}`,
		`{"image":"sleep","command":["a",null]}`,
		`{"image":"sleep","resources":null,"env":null}`,
		`{"image":"sleep"}{"image":"sleep"}`,
		`[]`, `null`, `"x"`, `{`, ``,
		strings.Repeat(`[`, 20000),
	} {
		f.Add(seed)
	}
	m := apitest.New(f, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	f.Fuzz(func(t *testing.T, body string) {
		before := stored(t, m)
		req := httptest.NewRequest("POST", "/v1/sessions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+alice)
		rec := httptest.NewRecorder()
		m.Server.ServeHTTP(rec, req)
		after := stored(t, m)
		switch {
		case rec.Code >= 500:
			t.Fatalf("body %q: %d %s", body, rec.Code, rec.Body)
		case rec.Code == http.StatusCreated:
			if after.sessions != before.sessions+1 || after.kernels <= before.kernels {
				t.Fatalf("body %q accepted, but the store went %+v → %+v", body, before, after)
			}
		default:
			if after != before {
				t.Fatalf("body %q refused with %d, but the store went %+v → %+v", body, rec.Code, before, after)
			}
			if !strings.Contains(rec.Body.String(), `"error"`) {
				t.Fatalf("body %q refused with %d without an error body: %s", body, rec.Code, rec.Body)
			}
		}
	})
}
