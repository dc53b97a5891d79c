// Package web is the dashboard every manager serves at "/": an HTML page,
// its ES modules and its stylesheet, embedded with go:embed so a manager
// serves it offline, and the handler that serves them with a strict
// Content-Security-Policy.
//
// The page is a client of the /v1 API and of nothing else: it holds the
// user's token in sessionStorage and sends it as an Authorization header,
// exactly as the CLI does, so the API's rules on who sees what are the
// dashboard's rules too and there is no cookie for a forged request to
// ride on. The event stream is read with fetch, because EventSource
// cannot send that header. The one cookie is for a service port opened
// in a new tab, which no script of ours can give a header: the manager
// sets it for that port's proxy path alone, HttpOnly and SameSite=Strict,
// and only the session proxy reads it (api.js's openPort).
//
// Why no framework and no npm build: the pages are tables, forms and a
// few bar, swimlane and line charts, which a small DOM helper (dom.js) and a
// few dozen lines of SVG drawing cover; a bundler would make `go build`
// depend on Node, and a vendored framework would be thousands of lines
// nobody here reviews. Plain modules load as they are, the browser caches
// them by ETag, and every string from the API reaches the page through
// textContent or setAttribute, never an HTML parser.
//
// It imports only the standard library: it knows the API by its URLs,
// not by its Go types, so it can import nothing from the store, the
// coordinator or the API server. Mount composes it with the API handler.
//
// Imports: none.
package web
