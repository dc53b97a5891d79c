package archtest_test

import (
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

// listed is one package as go list resolves it.
type listed struct {
	path, dir string
	imports   []string
}

// goTool is the go command of the toolchain running the test.
func goTool(t *testing.T) string {
	t.Helper()
	gotool := filepath.Join(goruntime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gotool); err != nil {
		t.Skipf("no go tool at %s: %v", gotool, err)
	}
	return gotool
}

// goRun runs the go tool with args in dir and returns its standard output.
func goRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// moduleRoot is the directory of the module's go.mod and the module's path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	f := strings.Fields(goRun(t, ".", "list", "-m", "-f", "{{.Dir}} {{.Path}}"))
	if len(f) != 2 {
		t.Fatalf("go list -m gave %q", f)
	}
	return f[0], f[1]
}

// listPackages runs go list over the whole module with format, one line a
// package, each split into fields.
func listPackages(t *testing.T, root, format string) [][]string {
	t.Helper()
	var pkgs [][]string
	for line := range strings.Lines(goRun(t, root, "list", "-f", format, "./...")) {
		if f := strings.Fields(line); len(f) > 0 {
			pkgs = append(pkgs, f)
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... listed nothing")
	}
	return pkgs
}

// rule is what a doc.go's last paragraph allows: Imports, and what the
// package never links (nil when it says nothing about links).
type rule struct {
	imports, neverLinks []string
}

// docRule reads the rule from the package comment in dir/doc.go.
func docRule(dir string) (rule, error) {
	file := filepath.Join(dir, "doc.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.PackageClauseOnly|parser.ParseComments)
	if errors.Is(err, fs.ErrNotExist) {
		return rule{}, errors.New("no doc.go")
	}
	if err != nil {
		return rule{}, err
	}
	if f.Doc == nil {
		return rule{}, errors.New("doc.go has no package comment")
	}
	paras := strings.Split(strings.TrimSpace(f.Doc.Text()), "\n\n")
	last := strings.Join(strings.Fields(paras[len(paras)-1]), " ")
	rest, ok := strings.CutPrefix(last, "Imports:")
	if !ok {
		return rule{}, errors.New("doc.go's package comment does not end with an Imports line")
	}
	imports, links, hasLinks := strings.Cut(rest, "Never links:")
	var r rule
	if r.imports, err = entries(imports); err != nil {
		return rule{}, fmt.Errorf("doc.go: Imports: %w", err)
	}
	if hasLinks {
		if r.neverLinks, err = entries(links); err != nil {
			return rule{}, fmt.Errorf("doc.go: Never links: %w", err)
		}
		if len(r.neverLinks) == 0 {
			return rule{}, errors.New("doc.go: Never links: none says nothing; leave the line out")
		}
	}
	return r, nil
}

// entries splits a list of the form " a, b, c." ("none." for none).
func entries(s string) ([]string, error) {
	s, ok := strings.CutSuffix(strings.TrimSpace(s), ".")
	if !ok {
		return nil, fmt.Errorf("%q does not end with a period", s)
	}
	if s == "none" {
		return nil, nil
	}
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" || strings.ContainsAny(e, " \t") {
			return nil, fmt.Errorf("%q is not an import path", e)
		}
		out = append(out, e)
	}
	return out, nil
}

// matches says whether the import path imp is named by entry, an entry of
// a doc.go line; the project's own entries are relative to module.
func matches(module, entry, imp string) bool {
	if first, _, _ := strings.Cut(entry, "/"); !strings.Contains(first, ".") {
		entry = module + "/" + entry
	}
	if tree, ok := strings.CutSuffix(entry, "/..."); ok {
		return imp == tree || strings.HasPrefix(imp, tree+"/")
	}
	return imp == entry
}

// standard says whether imp is in the standard library (or cgo's "C"):
// its first element has no dot.
func standard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// TestImportsWhatDocSays holds every package of the module to its doc.go:
// it imports nothing outside the standard library that its Imports line
// does not name, and links nothing its Never links line names.
func TestImportsWhatDocSays(t *testing.T) {
	t.Parallel()
	root, module := moduleRoot(t)
	deps := map[string][]string{}
	for _, f := range listPackages(t, root, `{{.ImportPath}} {{join .Deps " "}}`) {
		deps[f[0]] = f[1:]
	}
	for _, f := range listPackages(t, root, `{{.ImportPath}} {{.Dir}} {{join .Imports " "}}`) {
		if len(f) < 2 {
			t.Fatalf("go list gave %q", f)
		}
		p := listed{path: f[0], dir: f[1], imports: f[2:]}
		short := strings.TrimPrefix(p.path, module+"/")
		r, err := docRule(p.dir)
		if err != nil {
			t.Errorf("%s: %v", short, err)
			continue
		}
		for _, imp := range p.imports {
			if standard(imp) {
				continue
			}
			allowed := false
			for _, e := range r.imports {
				allowed = allowed || matches(module, e, imp)
			}
			if !allowed {
				t.Errorf("%s imports %s, which its doc.go's Imports line does not name", short, strings.TrimPrefix(imp, module+"/"))
			}
		}
		for _, dep := range deps[p.path] {
			for _, e := range r.neverLinks {
				if matches(module, e, dep) {
					t.Errorf("%s links %s, which its doc.go's Never links line forbids", short, strings.TrimPrefix(dep, module+"/"))
				}
			}
		}
	}
}
