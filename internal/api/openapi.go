package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// document builds the OpenAPI 3 description from the route table and the
// wire types themselves, so it cannot drift from what the server does:
// the paths are the routes, the schemas are reflected from the structs
// of package v1 that the handlers encode and decode.
func (s *Server) document() []byte {
	doc, _ := s.describe()
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // built from maps of plain values; cannot fail
	}
	return b
}

// describe returns the document and, by component name, the Go type each
// schema was reflected from, which a test holds to package v1.
func (s *Server) describe() (map[string]any, map[string]reflect.Type) {
	g := schemaGen{schemas: map[string]any{}, types: map[string]reflect.Type{}}
	errRef := g.ref(reflect.TypeOf(v1.ErrorResponse{}))
	paths := map[string]map[string]any{}
	for _, rt := range s.routes {
		op := map[string]any{
			"operationId": operationID(rt),
			"summary":     rt.summary,
			"x-access":    rt.access.String(),
		}
		if rt.desc != "" {
			op["description"] = rt.desc
		}
		switch rt.access {
		case public:
			op["security"] = []any{}
		default:
			op["security"] = []any{map[string]any{"bearer": []string{}}}
		}
		var params []any
		for _, p := range rt.pathParams() {
			params = append(params, map[string]any{"name": p, "in": "path", "required": true,
				"schema": map[string]any{"type": "string"}})
		}
		for _, p := range rt.query {
			sch := map[string]any{"type": p.typ}
			if p.repeat {
				sch = map[string]any{"type": "array", "items": sch}
			}
			params = append(params, map[string]any{"name": p.name, "in": "query", "description": p.desc,
				"schema": sch, "explode": true})
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.body != nil {
			op["requestBody"] = map[string]any{"required": !rt.bodyOptional, "content": map[string]any{
				"application/json": map[string]any{"schema": g.ref(reflect.TypeOf(rt.body))}}}
		}
		ok := map[string]any{"description": http.StatusText(rt.status)}
		switch {
		case rt.media != "" && rt.resp != nil:
			ok["content"] = map[string]any{rt.media: map[string]any{"schema": g.ref(reflect.TypeOf(rt.resp))}}
		case rt.media != "":
			ok["content"] = map[string]any{rt.media: map[string]any{"schema": map[string]any{"type": "string"}}}
		case rt.resp != nil:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.ref(reflect.TypeOf(rt.resp))}}
		}
		responses := map[string]any{strconv.Itoa(rt.status): ok}
		for _, st := range rt.alt {
			alt := map[string]any{}
			for k, v := range ok {
				alt[k] = v
			}
			alt["description"] = http.StatusText(st)
			responses[strconv.Itoa(st)] = alt
		}
		responses["default"] = map[string]any{"description": "an error", "content": map[string]any{
			"application/json": map[string]any{"schema": errRef}}}
		op["responses"] = responses
		p := rt.openAPIPath()
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		method := strings.ToLower(rt.method)
		if method == "" {
			// A subtree whose handler defines the calls: the agent RPC, the
			// session proxy.
			method = "post"
			if rt.docMethod != "" {
				method = rt.docMethod
			}
		}
		paths[p][method] = op
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "Sokovan-Go API", "version": "v1",
			"description": "Errors are {\"error\": {\"code\", \"message\", \"field\"}}. Quantities are strings."},
		"paths": paths,
		"components": map[string]any{
			"schemas":         g.schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
	}
	return doc, g.types
}

func operationID(rt route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.method))
	if rt.method == "" {
		b.WriteString("any")
	}
	for _, seg := range strings.FieldsFunc(rt.openAPIPath(), func(r rune) bool { return r == '/' || r == '-' || r == '.' }) {
		seg = strings.Trim(seg, "{}")
		if seg == "" {
			continue
		}
		b.WriteString(strings.ToUpper(seg[:1]) + seg[1:])
	}
	return b.String()
}

// schemaGen reflects Go wire types into OpenAPI schemas; named structs
// become components referred to by $ref.
type schemaGen struct {
	schemas map[string]any
	types   map[string]reflect.Type
}

var timeType = reflect.TypeOf(time.Time{})

func (g *schemaGen) ref(t reflect.Type) map[string]any {
	return g.schema(t)
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.Pointer:
		sch := g.schema(t.Elem())
		if _, isRef := sch["$ref"]; isRef {
			return map[string]any{"allOf": []any{sch}, "nullable": true}
		}
		out := map[string]any{"nullable": true}
		for k, v := range sch {
			out[k] = v
		}
		return out
	}
	if t == objectType {
		return g.oneOf(t, "kind", objectKinds)
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		name := schemaName(t)
		if _, done := g.schemas[name]; !done {
			g.schemas[name] = nil // a placeholder stops recursion
			g.types[name] = t
			props := map[string]any{}
			var required []string
			g.fields(t, props, &required)
			sort.Strings(required)
			sch := map[string]any{"type": "object", "properties": props}
			if strings.HasSuffix(t.Name(), "Request") || strings.HasSuffix(t.Name(), "Object") {
				// Requests (and apply's objects) refuse unknown fields;
				// answers may grow (API.md: extend freely), so they do not
				// promise a closed set.
				sch["additionalProperties"] = false
			}
			if len(required) > 0 {
				sch["required"] = required
			}
			g.schemas[name] = sch
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

// objectType is apply's object: on the wire an untyped JSON object (so
// the server names the field at fault), in the document oneOf the kinds'
// shapes, told apart by kind, each of whose spec is its create route's
// body schema.
var (
	objectType  = reflect.TypeFor[v1.Object]()
	objectKinds = map[string]reflect.Type{
		v1.KindSession:    reflect.TypeFor[v1.SessionObject](),
		v1.KindJob:        reflect.TypeFor[v1.JobObject](),
		v1.KindDeployment: reflect.TypeFor[v1.DeploymentObject](),
	}
)

// oneOf is the component of a type that is one of several, by the value
// of the discriminating property.
func (g *schemaGen) oneOf(t reflect.Type, prop string, by map[string]reflect.Type) map[string]any {
	name := schemaName(t)
	if _, done := g.schemas[name]; !done {
		g.schemas[name] = nil
		g.types[name] = t
		var refs []any
		mapping := map[string]any{}
		for _, k := range sortedKeys(by) {
			ref := g.schema(by[k])
			refs = append(refs, ref)
			mapping[k] = ref["$ref"]
		}
		g.schemas[name] = map[string]any{"oneOf": refs,
			"discriminator": map[string]any{"propertyName": prop, "mapping": mapping}}
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// fields adds a struct's JSON fields, flattening embedded structs as
// encoding/json does. Fields without omitempty are always present in
// answers; request fields are all optional and say so in descriptions.
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			g.fields(f.Type, props, required)
			continue
		}
		name, opts, ok := jsonName(f)
		if !ok {
			continue
		}
		sch := g.schema(f.Type)
		if enum := f.Tag.Get("enum"); enum != "" {
			sch["enum"] = strings.Split(enum, ",")
		}
		props[name] = sch
		if !strings.Contains(opts, "omitempty") && !strings.HasSuffix(t.Name(), "Request") {
			*required = append(*required, name)
		}
	}
}

// schemaName is the component name of a wire type: its Go name, and
// v1.List[v1.Session] → SessionList.
func schemaName(t reflect.Type) string { return componentName(t.Name()) }

func componentName(n string) string {
	if base, arg, ok := strings.Cut(n, "["); ok {
		arg = strings.TrimSuffix(arg, "]")
		if i := strings.LastIndex(arg, "."); i >= 0 {
			arg = arg[i+1:] // reflect spells the argument with its package path
		}
		return componentName(arg) + componentName(base)
	}
	return n
}
