package api

import (
	"net/http"
	"reflect"
)

// RouteOf reports the route pattern that serves r, "" for none.
func RouteOf(s *Server, r *http.Request) string {
	_, p := s.mux.Handler(r)
	return p
}

// Patterns lists every registered route pattern.
func Patterns(s *Server) []string {
	var out []string
	for _, rt := range s.routes {
		out = append(out, rt.pattern())
	}
	return out
}

// SchemaTypes maps each component of the OpenAPI document to the Go type
// its schema was reflected from.
func SchemaTypes(s *Server) map[string]reflect.Type {
	_, types := s.describe()
	return types
}

// WrapStore puts wrap around the server's store, for tests that inject a
// fault at the store's edge; the server's admission then reads and
// writes through it too. Call it before the server serves anything.
func WrapStore(s *Server, wrap func(Store) Store) {
	s.store = wrap(s.store)
	s.admit = s.ownAdmitter()
}
