package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/sokovan-go/sokovan/internal/admit"
)

// decode reads a request body holding one JSON object into dst, a pointer
// to a request struct. The body is first checked against the struct's
// shape, so an unknown field or a value of the wrong type is refused with
// the path of the field at fault ("resources.mem"), which encoding/json's
// own errors do not always give.
func decode(r *http.Request, dst any) error {
	raw, body, err := readObject(r)
	if err != nil {
		return err
	}
	if err := checkShape(raw, reflect.TypeOf(dst).Elem(), ""); err != nil {
		return err
	}
	return strictDecode(body, dst)
}

// strictDecode decodes what checkShape has accepted.
func strictDecode(body []byte, dst any) error {
	strict := json.NewDecoder(bytes.NewReader(body))
	strict.DisallowUnknownFields()
	if err := strict.Decode(dst); err != nil {
		// checkShape accepted what Decode refuses: a gap in checkShape,
		// still the client's input.
		return invalid("", "malformed request: %s", jsonProblem(err))
	}
	return nil
}

// readObject reads a request body holding one JSON object, as a generic
// value (numbers as json.Number) and as its bytes.
func readObject(r *http.Request) (map[string]any, []byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, nil, &apiError{Status: http.StatusRequestEntityTooLarge, Code: codeTooLarge,
				Message: fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit)}
		}
		return nil, nil, invalid("", "cannot read the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, invalid("", "request body is empty; a JSON object is expected")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, invalid("", "malformed JSON: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, invalid("", "malformed JSON: unexpected data after the object")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, nil, invalid("", "request body must be a JSON object, not %s", jsonKind(raw))
	}
	return obj, body, nil
}

// jsonProblem words a decoding error without Go type names.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%s (at byte %d)", syn.Error(), syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "the body ends in the middle of a value"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// checkShape walks a decoded JSON value against the Go type it is to be
// decoded into. JSON null is accepted anywhere and leaves the zero value,
// as encoding/json does.
func checkShape(v any, t reflect.Type, path string) *apiError {
	if v == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkShape(v, t.Elem(), path)
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, "an object", v)
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			ft, ok := fields[k]
			if !ok {
				return invalid(join(path, k), "unknown field %q", k)
			}
			if err := checkShape(obj[k], ft, join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, "an object", v)
		}
		for _, k := range sortedKeys(obj) {
			if err := checkShape(obj[k], t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return wrongType(path, "an array", v)
		}
		for i, e := range arr {
			if err := checkShape(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			if _, num := v.(json.Number); num && path != "" {
				return invalid(path, "must be a string (quantities and durations are written as strings, such as \"4g\" or \"90s\"), not a number")
			}
			return wrongType(path, "a string", v)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrongType(path, "true or false", v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "an integer", v)
		}
		i, err := n.Int64()
		if err != nil {
			return invalid(path, "must be an integer, not %s", n)
		}
		if reflect.Zero(t).OverflowInt(i) {
			return invalid(path, "%d is out of range", i)
		}
	case reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "a number", v)
		}
		if _, err := n.Float64(); err != nil {
			return invalid(path, "must be a number, not %s", n)
		}
	default:
		return invalid(path, "cannot be decoded") // a request type this walker does not know
	}
	return nil
}

func wrongType(path, want string, v any) *apiError {
	return invalid(path, "must be %s, not %s", want, jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// jsonFields maps a struct's JSON names to field types, as encoding/json
// names them (the tag's name, else the field name).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, ok := jsonName(f); ok {
			out[name] = f.Type
		}
	}
	return out
}

// jsonName is the name encoding/json gives field f (the tag's name, else
// the field name) with the tag's options; false when the field is not
// encoded (unexported, or tagged "-").
func jsonName(f reflect.StructField) (name, opts string, ok bool) {
	if !f.IsExported() {
		return "", "", false
	}
	name, opts, _ = strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return "", "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, opts, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// cleanText and validID are admission's rules for text and identifiers,
// which the API's other names and references follow too.
func cleanText(field, s string, maxLen int) *apiError {
	if e := admit.CleanText(field, s, maxLen); e != nil {
		return admitError(e)
	}
	return nil
}

func validID(s string) bool { return admit.ValidID(s) }

// queryBool reads an optional boolean query parameter: absent is false,
// and a value strconv cannot read is a 400 naming the parameter.
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalid(name, "must be true or false")
	}
	return b, nil
}
