package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// CSP allows scripts, styles and fetches from the manager itself only, and
// no inline script or style markup: a string that slipped into the page as
// HTML still could not run. Styles set from script (bar widths) go
// through the CSSOM, which style-src does not restrict.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	etag  string
	ctype string
}

// Handler serves the dashboard: index.html at "/" and the other files
// under "/ui/".
type Handler struct {
	assets map[string]asset // by URL path
}

// New loads the embedded files once; their hashes become ETags, so a
// browser revalidates cheaply and never runs a stale module after an
// upgrade.
func New() *Handler {
	h := &Handler{assets: map[string]asset{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := asset{body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: contentType(p)}
		rel := strings.TrimPrefix(p, "static/")
		if rel == "index.html" {
			h.assets["/"] = a
		} else {
			h.assets["/ui/"+rel] = a
		}
		return nil
	})
	if err != nil {
		panic(err) // the files are compiled in; a failure here is a build defect
	}
	return h
}

// contentType is fixed per extension rather than taken from the system's
// MIME table, which may not know .js as JavaScript (and modules refuse
// any other type).
func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// Serves reports whether the request is the dashboard's: a GET or HEAD of
// "/" or of a path under "/ui/".
func (h *Handler) Serves(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/")
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", CSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	a, ok := h.assets[r.URL.Path]
	if !ok || !h.Serves(r) {
		http.NotFound(w, r)
		return
	}
	hdr.Set("Content-Type", a.ctype)
	hdr.Set("ETag", a.etag)
	hdr.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// Mount serves the dashboard in front of api: the dashboard's requests go
// to the dashboard, every other one to api unchanged, so the API keeps
// its own 404 and 405 answers for everything else.
func Mount(api http.Handler) http.Handler {
	ui := New()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ui.Serves(r) {
			ui.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
