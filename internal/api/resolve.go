package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// minPrefix is the shortest id prefix that names a session: shorter ones
// match too much to be typed on purpose.
const minPrefix = 6

// maxCandidates bounds the sessions an ambiguous reference lists.
const maxCandidates = 10

// resolve finds the session a reference names, among those the caller
// may see: its full id, its name (unique among the owner's live
// sessions), or a unique prefix of its id, tried in that order so a name
// is never shadowed by a prefix. A name that only ended sessions have
// names the one of them, if there is only one. Another user's session is
// answered exactly as a missing one, and a prefix or name is matched
// against the caller's own sessions only unless the caller is an admin,
// so neither reveals that someone else's session exists.
func (s *Server) resolve(ctx context.Context, ref string) (store.SessionWithKernels, error) {
	missing := notFound("no session %q (give its id, a unique id prefix of %d or more characters, or its name)",
		ref, minPrefix)
	if !validID(ref) {
		return store.SessionWithKernels{}, missing
	}
	u := caller(ctx)
	mine := func(sk store.SessionWithKernels) bool { return isAdmin(u) || sk.Session.Owner.User == u.Name }
	sk, err := s.store.GetSession(ctx, domain.SessionID(ref))
	switch {
	case err == nil && mine(sk):
		return sk, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return store.SessionWithKernels{}, err
	}
	f := store.SessionFilter{Name: ref, Limit: maxCandidates + 1, Newest: true}
	if !isAdmin(u) {
		f.User = u.Name
	}
	named, err := s.store.ListSessions(ctx, f)
	if err != nil {
		return store.SessionWithKernels{}, err
	}
	// A live session holds its name alone (per owner); ended ones may
	// share it with it and with each other, and give way to it.
	named = liveFirst(named, func(s domain.Session) bool { return s.Status.Terminal() })
	if len(named) == 1 {
		return s.get(ctx, named[0].ID)
	}
	if len(named) > 1 {
		return store.SessionWithKernels{}, ambiguous(ref, "name", named, isAdmin(u))
	}
	if len(ref) < minPrefix || !isIDPrefix(ref) {
		return store.SessionWithKernels{}, missing
	}
	f = store.SessionFilter{IDPrefix: ref, Limit: maxCandidates + 1, Newest: true}
	if !isAdmin(u) {
		f.User = u.Name
	}
	prefixed, err := s.store.ListSessions(ctx, f)
	if err != nil {
		return store.SessionWithKernels{}, err
	}
	switch len(prefixed) {
	case 0:
		return store.SessionWithKernels{}, missing
	case 1:
		return s.get(ctx, prefixed[0].ID)
	}
	return store.SessionWithKernels{}, ambiguous(ref, "id prefix", prefixed, isAdmin(u))
}

// get reads a session found a moment ago by a listing; nothing is ever
// deleted, so it is there.
func (s *Server) get(ctx context.Context, id domain.SessionID) (store.SessionWithKernels, error) {
	sk, err := s.store.GetSession(ctx, id)
	if err != nil {
		return store.SessionWithKernels{}, fmt.Errorf("read session %s: %w", id, err)
	}
	return sk, nil
}

// isIDPrefix: ids are UUIDs, so only hex digits and dashes can start one.
func isIDPrefix(ref string) bool {
	for _, c := range ref {
		if !strings.ContainsRune("0123456789abcdef-", c) {
			return false
		}
	}
	return true
}

// ambiguous refuses a reference that names several sessions, listing
// them so the caller can pick one by id.
func ambiguous(ref, as string, candidates []domain.Session, admin bool) *apiError {
	more := ""
	if len(candidates) > maxCandidates {
		candidates, more = candidates[:maxCandidates], ", …"
	}
	parts := make([]string, len(candidates))
	for i, c := range candidates {
		parts[i] = fmt.Sprintf("%s (%s, %s", c.ID, nameOrNone(c.Name), c.Status)
		if admin {
			parts[i] += ", " + c.Owner.User
		}
		parts[i] += ")"
	}
	e := conflict("%q is ambiguous: as %s it matches %s%s; give more of the id", ref, as, strings.Join(parts, ", "), more)
	e.Field = "id"
	return e
}

func nameOrNone(name string) string {
	if name == "" {
		return "no name"
	}
	return name
}

// liveFirst is the items not ended, or all of them when every one has:
// what a name matches, where a live holder of the name comes before the
// ended ones that had it.
func liveFirst[T any](items []T, ended func(T) bool) []T {
	var live []T
	for _, it := range items {
		if !ended(it) {
			live = append(live, it)
		}
	}
	if len(live) > 0 {
		return live
	}
	return items
}
