package api

import (
	"encoding/json"
	"net/http"
	"strings"
)

// applySchemaID is where the manager serves the JSON Schema of an apply
// file; editors that read `# yaml-language-server: $schema=URL` check a
// file against it as it is typed.
const applySchemaID = "/v1/apply/schema.json"

func (s *Server) applySchemaRoutes() []route {
	return []route{{method: "GET", path: applySchemaID, access: public,
		summary: "The JSON Schema (draft-07) of an apply file: one object, or an array of them",
		desc: "Made from this document's own components: an object's spec is the schema of its kind's create route " +
			"body, so a file is described exactly as the API's requests are.",
		status: http.StatusOK, media: "application/schema+json", handle: s.applySchemaDoc}}
}

func (s *Server) applySchemaDoc(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/schema+json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.applySchema)
	return nil
}

// applySchemaDocument builds the apply file's JSON Schema from the
// OpenAPI components reachable from Object, with OpenAPI 3.0's nullable
// spelled as JSON Schema spells it.
func (s *Server) applySchemaDocument() []byte {
	doc, _ := s.describe()
	all := doc["components"].(map[string]any)["schemas"].(map[string]any)
	defs := map[string]any{}
	var visit func(name string)
	visit = func(name string) {
		if _, done := defs[name]; done {
			return
		}
		defs[name] = nil
		sch := jsonSchema(all[name], func(ref string) { visit(ref) })
		defs[name] = sch
	}
	visit(schemaName(objectType))
	object := map[string]any{"$ref": "#/definitions/" + schemaName(objectType)}
	b, err := json.MarshalIndent(map[string]any{
		"$schema":     "http://json-schema.org/draft-07/schema#",
		"$id":         applySchemaID,
		"title":       "sokovan apply file",
		"description": "One object (kind, name, spec) or an array of them; in YAML, several documents separated by ---.",
		"oneOf":       []any{object, map[string]any{"type": "array", "items": object}},
		"definitions": defs,
	}, "", "  ")
	if err != nil {
		panic(err) // maps of plain values; cannot fail
	}
	return b
}

// jsonSchema rewrites one OpenAPI schema as JSON Schema: references into
// #/definitions/ (each reported to ref), nullable as a null alternative.
func jsonSchema(v any, ref func(name string)) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k == "nullable" || k == "discriminator" {
				continue
			}
			out[k] = jsonSchema(e, ref)
		}
		if r, ok := x["$ref"].(string); ok {
			name := strings.TrimPrefix(r, "#/components/schemas/")
			ref(name)
			out["$ref"] = "#/definitions/" + name
		}
		if x["nullable"] == true {
			if t, ok := out["type"].(string); ok {
				out["type"] = []any{t, "null"}
			} else {
				return map[string]any{"anyOf": []any{out, map[string]any{"type": "null"}}}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSchema(e, ref)
		}
		return out
	}
	return v
}
