package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// fileObject is one object read from an apply file: its JSON value as
// the API takes it, and where each of its fields is in the file, so the
// server's "objects[i].spec.resources.mem" can be told as a file, a line
// and an object.
type fileObject struct {
	file  string
	value map[string]any
	// lines maps a field's path in the object ("", "spec",
	// "spec.resources.mem", "members[0].spec") to its line.
	lines map[string]int
}

// label is how messages name the object: `Session "train"`.
func (o fileObject) label() string {
	kind, _ := o.value["kind"].(string)
	name, _ := o.value["name"].(string)
	if kind == "" {
		kind = "object"
	}
	if name == "" {
		return kind + " (no name)"
	}
	return fmt.Sprintf("%s %q", kind, name)
}

// line is the line of the field at path, or of the nearest field that
// holds it.
func (o fileObject) line(path string) int {
	for {
		if n, ok := o.lines[path]; ok {
			return n
		}
		if path == "" {
			return 0
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
	}
}

// objectKinds are the Go shapes of the kinds, which guide how a YAML
// scalar is read (see convert).
var objectKinds = map[string]reflect.Type{
	v1.KindSession:    reflect.TypeFor[v1.SessionObject](),
	v1.KindJob:        reflect.TypeFor[v1.JobObject](),
	v1.KindDeployment: reflect.TypeFor[v1.DeploymentObject](),
}

// readSources reads the objects of every -f: a file, every .yaml, .yml
// and .json file of a directory (in name order, not descending), or "-"
// for standard input.
func readSources(paths []string, stdin io.Reader) ([]fileObject, error) {
	var out []fileObject
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("reading standard input: %w", err)
			}
			objs, err := parseFile("stdin", data, false)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
			continue
		}
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			objs, err := parseFile(f, data, strings.EqualFold(filepath.Ext(f), ".json"))
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no objects to apply: the files hold none")
	}
	return out, nil
}

func expand(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .yaml, .yml or .json files in the directory", p)
	}
	slices.Sort(files)
	return files, nil
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// parseFile reads the objects of one file: YAML documents separated by
// ---, each one object or a list of them; JSON, which YAML reads too, one
// object or an array. strict (JSON) takes values as written; in YAML a
// plain number or boolean where the API wants a string (`cpu: 2`) is
// taken as its text, as a person writing YAML means it.
func parseFile(name string, data []byte, strict bool) ([]fileObject, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []fileObject
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			msg := err.Error()
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				at := name
				if m[1] != "" {
					at += ":" + m[1]
				}
				return nil, fmt.Errorf("%s: %s", at, strings.TrimPrefix(msg, m[0]))
			}
			return nil, fmt.Errorf("%s: %s", name, msg)
		}
		if len(doc.Content) == 0 {
			continue // an empty document
		}
		root := doc.Content[0]
		switch root.Kind {
		case yaml.MappingNode:
			o, err := readObject(name, root, strict)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		case yaml.SequenceNode:
			for _, n := range root.Content {
				o, err := readObject(name, n, strict)
				if err != nil {
					return nil, err
				}
				out = append(out, o)
			}
		case yaml.ScalarNode:
			if root.ShortTag() == "!!null" {
				continue
			}
			fallthrough
		default:
			return nil, fmt.Errorf("%s:%d: an object (kind, name, spec) or a list of them is expected here", name, root.Line)
		}
	}
}

func readObject(file string, n *yaml.Node, strict bool) (fileObject, error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return fileObject{}, fmt.Errorf("%s:%d: an object (kind, name, spec) is expected here", file, n.Line)
	}
	var t reflect.Type
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "kind" {
			t = objectKinds[n.Content[i+1].Value]
		}
	}
	c := converter{file: file, strict: strict, lines: map[string]int{"": n.Line}}
	v, err := c.convert(n, t, "")
	if err != nil {
		return fileObject{}, err
	}
	return fileObject{file: file, value: v.(map[string]any), lines: c.lines}, nil
}

// converter turns YAML nodes into the JSON values the API reads,
// recording each field's line.
type converter struct {
	file   string
	strict bool
	lines  map[string]int
	depth  int
}

func (c *converter) convert(n *yaml.Node, t reflect.Type, path string) (any, error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > 64 {
		return nil, fmt.Errorf("%s:%d: nested too deep", c.file, n.Line)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.convert(n.Alias, t, path)
	case yaml.MappingNode:
		return c.mapping(n, t, path)
	case yaml.SequenceNode:
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			elem = t.Elem()
		}
		out := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			c.lines[p] = e.Line
			v, err := c.convert(e, elem, p)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return c.scalar(n, t)
}

func (c *converter) mapping(n *yaml.Node, t reflect.Type, path string) (any, error) {
	fields := map[string]reflect.Type{}
	if t != nil && t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields[name] = f.Type
		}
	}
	out := map[string]any{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s:%d: a field name must be text", c.file, k.Line)
		}
		p := path + "." + k.Value
		if path == "" {
			p = k.Value
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("%s:%d: %s is given twice", c.file, k.Line, p)
		}
		c.lines[p] = k.Line
		var ft reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Map:
			ft = t.Elem()
		case t != nil:
			ft = fields[k.Value]
		}
		v, err := c.convert(val, ft, p)
		if err != nil {
			return nil, err
		}
		out[k.Value] = v
	}
	return out, nil
}

func (c *converter) scalar(n *yaml.Node, t reflect.Type) (any, error) {
	wantString := t != nil && t.Kind() == reflect.String
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	case "!!bool", "!!int", "!!float":
		if wantString && !c.strict && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
			return n.Value, nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", c.file, n.Line, err)
		}
		if f, ok := v.(float64); ok {
			// Keep the number as written for the API's own check.
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		}
		return v, nil
	}
	return n.Value, nil
}

// objectError tells an API refusal of an apply in the file's terms: the
// file and line, the object, and the field within it.
func objectError(objs []fileObject, e *apiError) error {
	field := e.Body.Field
	rest, ok := strings.CutPrefix(field, "objects[")
	if !ok {
		return e
	}
	num, rest, ok := strings.Cut(rest, "]")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= len(objs) {
		return e
	}
	o := objs[i]
	path := strings.TrimPrefix(rest, ".")
	where := o.file
	if n := o.line(path); n > 0 {
		where += ":" + strconv.Itoa(n)
	}
	if path == "" {
		return fmt.Errorf("%s: %s: %s", where, o.label(), e.Body.Message)
	}
	return fmt.Errorf("%s: %s: %s: %s", where, o.label(), path, e.Body.Message)
}
