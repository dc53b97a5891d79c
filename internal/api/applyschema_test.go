package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
)

// validate checks v against a JSON Schema of the subset the apply schema
// uses ($ref, oneOf, anyOf, allOf, type, enum, properties, required,
// additionalProperties, items), enough to hold files to it in a test.
func validate(root map[string]any, sch map[string]any, v any, path string) error {
	if r, ok := sch["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/definitions/")
		def, ok := root["definitions"].(map[string]any)[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: $ref %s does not resolve", path, r)
		}
		return validate(root, def, v, path)
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if alts, ok := sch[key].([]any); ok {
			n := 0
			var last error
			for _, a := range alts {
				if err := validate(root, a.(map[string]any), v, path); err == nil {
					n++
				} else {
					last = err
				}
			}
			if n == 0 || key == "oneOf" && n > 1 {
				return fmt.Errorf("%s: %d of %s match (%v)", path, n, key, last)
			}
		}
	}
	if all, ok := sch["allOf"].([]any); ok {
		for _, a := range all {
			if err := validate(root, a.(map[string]any), v, path); err != nil {
				return err
			}
		}
	}
	if t, ok := sch["type"]; ok && !typeOK(t, v) {
		return fmt.Errorf("%s: %v is not of type %v", path, v, t)
	}
	if enum, ok := sch["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == v
		}
		if !found {
			return fmt.Errorf("%s: %v is not one of %v", path, v, enum)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := sch["properties"].(map[string]any)
		for _, r := range asList(sch["required"]) {
			if _, ok := x[r.(string)]; !ok {
				return fmt.Errorf("%s: %s is required", path, r)
			}
		}
		for k, e := range x {
			if p, ok := props[k].(map[string]any); ok {
				if err := validate(root, p, e, path+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := sch["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: unknown field %s", path, k)
				}
			case map[string]any:
				if err := validate(root, ap, e, path+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if items, ok := sch["items"].(map[string]any); ok {
			for i, e := range x {
				if err := validate(root, items, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func asList(v any) []any { l, _ := v.([]any); return l }

func typeOK(t any, v any) bool {
	if l, ok := t.([]any); ok {
		for _, e := range l {
			if typeOK(e, v) {
				return true
			}
		}
		return false
	}
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return true
}

// The apply file's JSON Schema is the API's own: an object's spec is the
// very schema of its create route's body, every reference resolves, and
// files that apply pass it while a misspelt field or kind does not.
func TestApplySchema(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	var schema, openapi map[string]any
	if code := m.Do("", "GET", "/v1/apply/schema.json", nil, &schema); code != http.StatusOK {
		t.Fatalf("schema: %d", code)
	}
	m.Do("", "GET", "/v1/openapi.json", nil, &openapi)
	defs := schema["definitions"].(map[string]any)
	paths := openapi["paths"].(map[string]any)
	for kind, route := range map[string]string{"SessionObject": "/v1/sessions", "JobObject": "/v1/jobs", "DeploymentObject": "/v1/deployments"} {
		spec := defs[kind].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)["$ref"]
		body := paths[route].(map[string]any)["post"].(map[string]any)["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["$ref"]
		if strings.TrimPrefix(spec.(string), "#/definitions/") != strings.TrimPrefix(body.(string), "#/components/schemas/") {
			t.Errorf("%s's spec is %v, but POST %s takes %v", kind, spec, route, body)
		}
	}
	for _, c := range []struct {
		file string
		ok   bool
	}{
		{`{"kind": "Session", "name": "a", "spec": {"image": "sleep", "resources": {"cpu": "1"}, "cluster_size": 2}}`, true},
		{`[{"kind": "Job", "name": "j", "spec": {"min_available": 2}, "members": [{"name": "m", "spec": {"image": "sleep"}}]},
		  {"kind": "Deployment", "name": "d", "spec": {"image": "http-echo", "replicas": 2, "health_check": {"path": "/h"}}}]`, true},
		{`{"kind": "Session", "name": "a", "spec": {"imge": "sleep"}}`, false},
		{`{"kind": "Pod", "name": "a", "spec": {}}`, false},
		{`{"kind": "Session", "spec": {"image": "sleep"}}`, false},
		{`{"kind": "Session", "name": "a", "spec": {"image": "sleep", "resources": {"cpu": 1}}}`, false},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.file), &v); err != nil {
			t.Fatal(err)
		}
		if err := validate(schema, schema, v, "$"); (err == nil) != c.ok {
			t.Errorf("%s: valid %v (%v), want %v", c.file, err == nil, err, c.ok)
		}
	}
}
