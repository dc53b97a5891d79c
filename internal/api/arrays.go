package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/sokovan-go/sokovan/internal/admit"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// maxArrays bounds GET /v1/arrays.
const maxArrays = 1000

func (s *Server) createArray(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	var req v1.CreateSessionRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Array == "" {
		return invalid("array", "an array needs its indexes, such as \"0-99%%10\"")
	}
	if req.Job != "" {
		return invalid("job", "an array's elements cannot join a job")
	}
	id := domain.ArrayID(newUUID())
	arr, elems, err := s.admit.BuildArray(ctx, admit.ArrayRequest{ID: id, Spec: req.Array,
		Session: s.admitRequest(u, req), ElementID: func(int) domain.SessionID { return domain.SessionID(newUUID()) }})
	if err != nil {
		return fromAdmit(err)
	}
	if err := s.admit.SubmitArray(ctx, arr, elems); err != nil {
		return fromAdmit(err)
	}
	out, err := s.arrayOut(ctx, arr, false)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/arrays/"+string(arr.ID))
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listArrays(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	f := store.ArrayFilter{User: u.Name, Limit: maxArrays}
	if isAdmin(u) {
		f.User = ""
	}
	arrays, err := s.store.ListArrays(ctx, f)
	if err != nil {
		return err
	}
	sums, err := s.store.ArraySummaries(ctx, arrayIDs(arrays))
	if err != nil {
		return err
	}
	out := v1.List[v1.Array]{Items: make([]v1.Array, 0, len(arrays))}
	for _, a := range arrays {
		out.Items = append(out.Items, arrayWire(a, sums[a.ID]))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getArray(w http.ResponseWriter, r *http.Request) error {
	a, err := s.resolveArray(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out, err := s.arrayOut(r.Context(), a, true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteArray ends every live element of the array in one call: the
// PENDING ones are cancelled together, the others terminated.
func (s *Server) deleteArray(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	a, err := s.resolveArray(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	force, err := queryBool(r, "force")
	if err != nil {
		return err
	}
	elems, err := s.store.ArrayElements(ctx, a.ID)
	if err != nil {
		return err
	}
	var live []domain.SessionID
	for _, e := range elems {
		if !e.Status.Terminal() {
			live = append(live, e.ID)
		}
	}
	if len(live) == 0 {
		return conflict("array %s (%s) has already ended", a.Name, a.ID)
	}
	reason := "array " + a.Name + " terminated by " + caller(ctx).Name
	if force {
		reason += " (forced)"
	}
	n, err := s.sessions.TerminateAll(ctx, live, reason, force)
	if err != nil {
		return err
	}
	out, err := s.arrayOut(ctx, a, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, v1.ArrayRemoved{Array: out, Ended: n})
	return nil
}

// resolveArray finds the array a reference names among those the caller
// may see, as sessions are found: its id, its name (the live array of
// that name, else the newest), or a unique id prefix. Another user's
// array is answered as a missing one.
func (s *Server) resolveArray(ctx context.Context, ref string) (domain.Array, error) {
	missing := notFound("no array %q (give its id, a unique id prefix of %d or more characters, or its name)", ref, minPrefix)
	if !validID(ref) {
		return domain.Array{}, missing
	}
	u := caller(ctx)
	a, err := s.store.GetArray(ctx, domain.ArrayID(ref))
	switch {
	case err == nil && (isAdmin(u) || a.Owner.User == u.Name):
		return a, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return domain.Array{}, err
	}
	f := store.ArrayFilter{User: u.Name, Name: ref, Limit: maxCandidates + 1}
	if isAdmin(u) {
		f.User = ""
	}
	named, err := s.store.ListArrays(ctx, f)
	if err != nil {
		return domain.Array{}, err
	}
	if len(named) > 0 {
		return s.pickNamed(ctx, ref, named)
	}
	if len(ref) < minPrefix || !isIDPrefix(ref) {
		return domain.Array{}, missing
	}
	f.Name, f.IDPrefix = "", ref
	prefixed, err := s.store.ListArrays(ctx, f)
	if err != nil {
		return domain.Array{}, err
	}
	switch len(prefixed) {
	case 0:
		return domain.Array{}, missing
	case 1:
		return prefixed[0], nil
	}
	return domain.Array{}, conflict("%d arrays have ids starting %q; give more of the id", len(prefixed), ref)
}

// pickNamed chooses among arrays of one name (newest first): the one
// with live elements (a name is live on one array at a time per owner),
// else the newest, so an ended array can still be shown.
func (s *Server) pickNamed(ctx context.Context, ref string, named []domain.Array) (domain.Array, error) {
	sums, err := s.store.ArraySummaries(ctx, arrayIDs(named))
	if err != nil {
		return domain.Array{}, err
	}
	var live []domain.Array
	for _, a := range named {
		if liveCount(sums[a.ID]) > 0 {
			live = append(live, a)
		}
	}
	if len(live) > 1 {
		return domain.Array{}, conflict("%d live arrays are named %q (an admin sees every user's); use the array's id",
			len(live), ref)
	}
	if len(live) == 1 {
		return live[0], nil
	}
	return named[0], nil
}

func (s *Server) arrayOut(ctx context.Context, a domain.Array, withElements bool) (v1.Array, error) {
	sums, err := s.store.ArraySummaries(ctx, []domain.ArrayID{a.ID})
	if err != nil {
		return v1.Array{}, err
	}
	out := arrayWire(a, sums[a.ID])
	if !withElements {
		return out, nil
	}
	elems, err := s.store.ArrayElements(ctx, a.ID)
	if err != nil {
		return v1.Array{}, err
	}
	out.Elements = make([]v1.ArrayElement, len(elems))
	for i, e := range elems {
		out.Elements[i] = v1.ArrayElement{ID: string(e.ID), Name: e.Name, Index: e.ArrayIndex, Status: e.Status.String(),
			Outcome: e.Outcome.String()}
	}
	return out, nil
}

func arrayWire(a domain.Array, sum domain.ArraySummary) v1.Array {
	out := v1.Array{ID: string(a.ID), Name: a.Name, Owner: a.Owner.User, Spec: a.Spec, Count: a.Count,
		MaxRunning: a.MaxRunning, CreatedAt: a.CreatedAt.UTC(), Statuses: map[string]int{}, Outcomes: map[string]int{},
		Live: liveCount(sum), Outcome: sum.Outcome().String()}
	for st, n := range sum.ByStatus {
		out.Statuses[st.String()] += n
	}
	for o, n := range sum.ByOutcome {
		if o != domain.OutcomeNone {
			out.Outcomes[o.String()] += n
		}
	}
	return out
}

func liveCount(sum domain.ArraySummary) int {
	n := 0
	for st, c := range sum.ByStatus {
		if !st.Terminal() {
			n += c
		}
	}
	return n
}

func arrayIDs(arrays []domain.Array) []domain.ArrayID {
	return mapped(arrays, func(a domain.Array) domain.ArrayID { return a.ID })
}
