package web

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func TestMount(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handled-By", "api")
		w.WriteHeader(http.StatusTeapot)
	})
	h := Mount(api)
	tests := []struct {
		name, method, path string
		wantStatus         int
		wantType           string // "" when the API answers
	}{
		{"the page", "GET", "/", http.StatusOK, "text/html; charset=utf-8"},
		{"the page, HEAD", "HEAD", "/", http.StatusOK, "text/html; charset=utf-8"},
		{"a module", "GET", "/ui/app.js", http.StatusOK, "text/javascript; charset=utf-8"},
		{"a view module", "GET", "/ui/views/session.js", http.StatusOK, "text/javascript; charset=utf-8"},
		{"the stylesheet", "GET", "/ui/app.css", http.StatusOK, "text/css; charset=utf-8"},
		{"an unknown asset", "GET", "/ui/nope.js", http.StatusNotFound, "text/plain; charset=utf-8"},
		{"index.html is only at /", "GET", "/ui/index.html", http.StatusNotFound, "text/plain; charset=utf-8"},
		{"the API", "GET", "/v1/me", http.StatusTeapot, ""},
		{"a POST to / is the API's to refuse", "POST", "/", http.StatusTeapot, ""},
		{"health", "GET", "/healthz", http.StatusTeapot, ""},
		{"an unknown path", "GET", "/nope", http.StatusTeapot, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantType == "" {
				if rec.Header().Get("X-Handled-By") != "api" || rec.Header().Get("Content-Security-Policy") != "" {
					t.Errorf("headers = %v; want the API's answer untouched", rec.Header())
				}
				return
			}
			if got := rec.Header().Get("Content-Type"); got != tt.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tt.wantType)
			}
			if got := rec.Header().Get("Content-Security-Policy"); got != CSP {
				t.Errorf("CSP = %q, want %q", got, CSP)
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
		})
	}
}

func TestCSPAllowsNoInlineScript(t *testing.T) {
	for _, d := range strings.Split(CSP, ";") {
		d = strings.TrimSpace(d)
		if strings.HasPrefix(d, "script-src") && d != "script-src 'self'" {
			t.Errorf("script-src = %q, want 'self' only", d)
		}
	}
	if strings.Contains(CSP, "unsafe-") {
		t.Errorf("CSP %q allows something unsafe", CSP)
	}
}

func TestRevalidation(t *testing.T) {
	h := New()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/app.js", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q; want an ETag and no-cache", etag, rec.Header().Get("Cache-Control"))
	}
	req := httptest.NewRequest("GET", "/ui/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("revalidation with the ETag = %d, want 304", rec.Code)
	}
}

// TestAssetsStayEscaped keeps the page's one rule about data: it reaches
// the DOM as text, never as markup. A sink that parses HTML, or code
// built from strings, fails the test wherever it appears.
func TestAssetsStayEscaped(t *testing.T) {
	sinks := regexp.MustCompile(`\.innerHTML|\.outerHTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(|setTimeout\(\s*['"]`)
	inlineScript := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)
	inlineHandler := regexp.MustCompile(`\son[a-z]+\s*=`)
	walk(t, func(p, body string) {
		switch path.Ext(p) {
		case ".js":
			for i, line := range strings.Split(body, "\n") {
				if loc := sinks.FindString(line); loc != "" && !strings.HasPrefix(strings.TrimSpace(line), "//") {
					t.Errorf("%s:%d uses %s: build nodes with dom.js instead", p, i+1, loc)
				}
			}
		case ".html":
			if inlineScript.MatchString(body) || inlineHandler.MatchString(body) || strings.Contains(body, "style=") {
				t.Errorf("%s has inline script, handlers or style, which the CSP refuses", p)
			}
		}
	})
}

// TestImportsResolve catches a module that imports a file the embed does
// not hold, which the browser would only report at run time.
func TestImportsResolve(t *testing.T) {
	imports := regexp.MustCompile(`(?m)^import\s[^;]*?from\s+'([^']+)'`)
	files := map[string]bool{}
	walk(t, func(p, _ string) { files[p] = true })
	walk(t, func(p, body string) {
		if path.Ext(p) != ".js" {
			return
		}
		for _, m := range imports.FindAllStringSubmatch(body, -1) {
			if target := path.Join(path.Dir(p), m[1]); !files[target] {
				t.Errorf("%s imports %s, which is not embedded", p, m[1])
			}
		}
	})
}

func walk(t *testing.T, fn func(p, body string)) {
	t.Helper()
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		fn(p, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
