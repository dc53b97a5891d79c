package archtest_test

import (
	"cmp"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function in production code may take,
// from its func keyword to its closing brace.
const maxFuncLines = 120

// longFuncs are the functions that were over maxFuncLines when the limit
// came in, with their length then. An entry may only shrink: the test
// fails when one grows, and when one fits the limit (or is gone) and
// should leave the list.
var longFuncs = map[string]int{
	"internal/store/storetest/snapcache.go:testSnapshotCacheIsExact": 262,
	"internal/api/catalog.go:Server.putGroup":                        185,
	"internal/admit/admit.go:Admitter.Build":                         176,
	"internal/coordinator/apply.go:Coordinator.apply":                170,
	"internal/api/routes.go:Server.table":                            162,
	"internal/scheduler/framework/reserve.go:Backfill.Reserve":       160,
	"cmd/sokovan/agentcmd.go:newAgentDaemonCmd":                      151,
	"cmd/sokovan/cli_cluster.go:newRGCmd":                            142,
	"internal/agent/runtime/process/process.go:Runtime.start":        139,
	"internal/simulate/report.go:runner.timeSeries":                  138,
	"internal/api/events.go:Server.events":                           135,
	"internal/store/storetest/preempt.go:testPreemption":             133,
	"internal/store/storetest/limits.go:testTimeLimits":              128,
	"internal/store/storetest/stress.go:testConcurrentAppliers":      127,
}

// funcLen is one function of a production file.
type funcLen struct {
	key   string // file relative to the module root, ':', [Recv.]Name
	line  int
	lines int
}

// productionFuncs lists every function and method declared in the
// module's non-test Go files (testdata and hidden folders left out),
// longest first.
func productionFuncs(t *testing.T, root string) []funcLen {
	t.Helper()
	var out []funcLen
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		seen := map[string]int{}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := filepath.ToSlash(rel) + ":" + funcName(fn)
			if seen[key]++; seen[key] > 1 { // init may be declared more than once
				key += "#" + strings.Repeat("I", seen[key])
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			out = append(out, funcLen{key: key, line: start.Line, lines: end.Line - start.Line + 1})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b funcLen) int {
		return cmp.Or(cmp.Compare(b.lines, a.lines), strings.Compare(a.key, b.key))
	})
	return out
}

// funcName is Name for a function and Recv.Name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) { // generic receivers: T[K] or T[K, V]
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestNoLongFunction fails on a production function over maxFuncLines
// lines that longFuncs does not list, on a listed one that grew, and on a
// listed one that now fits or is gone. With -v it logs every function
// over the limit.
func TestNoLongFunction(t *testing.T) {
	t.Parallel()
	root, _ := moduleRoot(t)
	found := map[string]int{}
	for _, f := range productionFuncs(t, root) {
		found[f.key] = f.lines
		if f.lines <= maxFuncLines {
			continue
		}
		file, name, _ := strings.Cut(f.key, ":")
		if testing.Verbose() {
			t.Logf("%s:%d %s %d lines", file, f.line, name, f.lines)
		}
		allowed, listed := longFuncs[f.key]
		switch {
		case !listed:
			t.Errorf("%s:%d %s is %d lines, over %d: split it", file, f.line, name, f.lines, maxFuncLines)
		case f.lines > allowed:
			t.Errorf("%s:%d %s grew to %d lines from the %d longFuncs allows: split it", file, f.line, name, f.lines, allowed)
		}
	}
	for key := range longFuncs {
		lines, ok := found[key]
		switch {
		case !ok:
			t.Errorf("longFuncs lists %s, which is gone: take it off the list", key)
		case lines <= maxFuncLines:
			t.Errorf("%s is %d lines now, within %d: take it off longFuncs", key, lines, maxFuncLines)
		}
	}
}
