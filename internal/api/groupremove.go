package api

import (
	"errors"
	"net/http"

	"github.com/sokovan-go/sokovan/internal/store"
)

// deleteGroup removes a drained, empty resource group (seed 003's "then
// can be removed"). Removal is soft: the row stays, because ended sessions
// and departed agents name the group, but it is hidden from every read
// and refuses sessions and agents until a PUT of its name creates a new
// group.
// The store decides in one transaction, so nothing slips in between the
// counts and the removal.
func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	name := r.PathValue("name")
	if !validID(name) {
		return notFound("no resource group %q", name)
	}
	if name == s.cfg.DefaultGroup {
		// Submits without a group go there, and a manager recreates it at
		// start, which a removed name would refuse.
		e := conflict("resource group %s is the default group of submits and cannot be removed", name)
		e.Field = "name"
		return e
	}
	g, err := s.store.RemoveResourceGroup(ctx, name, s.clock.Now().UTC())
	var re *store.GroupRemoveError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("no resource group %q", name)
	case errors.As(err, &re) && re.State.String() != "DRAINING":
		e := conflict("resource group %s is %s: only a DRAINING group can be removed (drain it first: sokovan rg rm drains, then removes)", name, re.State)
		e.Field = "state"
		return e
	case errors.As(err, &re):
		return conflict("resource group %s still holds %d live sessions and %d ALIVE or LOST agents: "+
			"wait for its sessions to end and move or stop its agents first", name, re.LiveSessions, re.Agents)
	case err != nil:
		return err
	}
	s.sessions.Mark()
	writeJSON(w, http.StatusOK, groupOut(s.slots, g))
	return nil
}
