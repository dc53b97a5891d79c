package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestOpenAPIMatchesRoutes checks the document against the mux both
// ways: every registered route is described, and every described
// operation is served by the route it names.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	code, raw := m.Raw("", "GET", "/v1/openapi.json", nil)
	if code != 200 {
		t.Fatalf("openapi.json: %d", code)
	}
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi version %q", doc.OpenAPI)
	}
	// Each documented operation, requested with its path parameters
	// filled in, reaches a route, and the route's pattern describes it.
	described := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			concrete := path
			for _, seg := range strings.Split(path, "/") {
				if strings.HasPrefix(seg, "{") {
					concrete = strings.Replace(concrete, seg, "x", 1)
				}
			}
			req := httptest.NewRequest(strings.ToUpper(method), concrete, nil)
			pattern := api.RouteOf(m.Server, req)
			if pattern == "" {
				t.Errorf("documented %s %s is not routed", strings.ToUpper(method), path)
				continue
			}
			described[pattern] = true
		}
	}
	for _, p := range api.Patterns(m.Server) {
		if !described[p] {
			t.Errorf("route %s is not in the OpenAPI document", p)
		}
	}
	// The API.md table is all there.
	for _, op := range []string{
		"POST /v1/sessions", "GET /v1/sessions", "GET /v1/sessions/{id}", "GET /v1/sessions/{id}/history",
		"GET /v1/sessions/{id}/why", "DELETE /v1/sessions/{id}", "GET /v1/sessions/{id}/logs", "GET /v1/agents",
		"POST /v1/agents/{id}/cordon", "POST /v1/agents/{id}/uncordon", "POST /v1/agents/{id}/drain",
		"GET /v1/resource-groups", "GET /v1/resource-groups/{name}", "PUT /v1/resource-groups/{name}",
		"POST /v1/users", "PUT /v1/policies/{scope}/{name}", "GET /v1/events", "GET /healthz", "GET /readyz",
		"GET /metrics", "GET /v1/openapi.json",
	} {
		method, path, _ := strings.Cut(op, " ")
		if _, ok := doc.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("%s is missing from the document", op)
		}
	}
	// Schemas are reflected from the wire types.
	var sess struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(doc.Components.Schemas["Session"], &sess); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id", "name", "owner", "type", "image", "status", "status_reason", "status_changed_at",
		"created_at", "resource_group", "priority", "requested_slots", "cluster_mode", "cluster_size", "kernels"} {
		if _, ok := sess.Properties[f]; !ok || !slices.Contains(sess.Required, f) {
			t.Errorf("Session schema lacks required %s", f)
		}
	}
}

// TestOpenAPISchemasAreSharedTypes: every body the document describes is
// a type of package v1, the one the CLI and tools decode, so a shape
// declared only inside the server cannot reach the document.
func TestOpenAPISchemasAreSharedTypes(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	_, raw := m.Raw("", "GET", "/v1/openapi.json", nil)
	type media map[string]struct {
		Schema map[string]any `json:"schema"`
	}
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody *struct {
				Content media `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Content media `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	shared := reflect.TypeFor[v1.Session]().PkgPath()
	types := api.SchemaTypes(m.Server)
	for name := range doc.Components.Schemas {
		if typ, ok := types[name]; !ok || typ.PkgPath() != shared {
			t.Errorf("component %s is reflected from %v, not a type of %s", name, typ, shared)
		}
	}
	check := func(where string, content media) {
		for mt, c := range content {
			ref, isRef := c.Schema["$ref"].(string)
			switch {
			case isRef:
				name := strings.TrimPrefix(ref, "#/components/schemas/")
				if _, ok := doc.Components.Schemas[name]; !ok {
					t.Errorf("%s %s: $ref %s names no component", where, mt, ref)
				}
			case mt == "application/json" && !strings.Contains(where, "/v1/openapi.json"):
				// The document itself is the one JSON answer with no type.
				t.Errorf("%s %s: schema %v is not a shared type", where, mt, c.Schema)
			}
		}
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			where := strings.ToUpper(method) + " " + path
			if op.RequestBody != nil {
				check(where+" request", op.RequestBody.Content)
			}
			for code, resp := range op.Responses {
				check(where+" "+code, resp.Content)
			}
		}
	}
}

func TestUnroutedRequests(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	for _, tc := range []struct {
		method, path string
		want         int
		code         string
	}{
		{"GET", "/v1/nothing", 404, "not_found"},
		{"PATCH", "/v1/sessions", 405, "method_not_allowed"},
		{"POST", "/healthz", 405, "method_not_allowed"},
	} {
		req, _ := http.NewRequest(tc.method, m.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e v1.ErrorResponse
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.want || e.Error.Code != tc.code {
			t.Errorf("%s %s: %d %+v, want %d %s", tc.method, tc.path, resp.StatusCode, e, tc.want, tc.code)
		}
		if tc.want == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
		}
	}
}
