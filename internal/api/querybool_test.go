package api

import (
	"errors"
	"net/http/httptest"
	"testing"
)

// The four handlers that read a boolean query parameter share queryBool,
// so its answers are theirs: absent is false, and a value strconv cannot
// read is a 400 naming the parameter.
func TestQueryBool(t *testing.T) {
	for _, c := range []struct {
		query string
		want  bool
		bad   bool
	}{
		{"", false, false},
		{"?force=true", true, false},
		{"?force=1", true, false},
		{"?force=false", false, false},
		{"?other=true", false, false},
		{"?force=maybe", false, true},
	} {
		got, err := queryBool(httptest.NewRequest("DELETE", "/v1/sessions/x"+c.query, nil), "force")
		if c.bad {
			var e *apiError
			if !errors.As(err, &e) || e.Status != 400 || e.Field != "force" {
				t.Fatalf("%q: want a 400 naming force, got %v", c.query, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Fatalf("%q: got %v, %v; want %v", c.query, got, err, c.want)
		}
	}
}
