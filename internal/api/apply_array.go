package api

import (
	"context"

	"github.com/sokovan-go/sokovan/internal/admit"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// dryElement is what a dry run finds for one element of a new array,
// gathered as for a session and folded into its array's item.
type dryElement struct {
	item, index int
	first       bool
	found       v1.ApplyItem
}

// planArray checks a Session object with spec.array, admitted as POST
// /v1/arrays admits one, and decides as planSession does, the array's
// name being its identity: created when the caller has no live array of
// the name, unchanged when the live one has the file's indexes and its
// elements the file's spec, refused otherwise (an array cannot change).
// A name is one live session or one live array, as the store keeps it,
// so a live session of the name refuses the array.
func (s *Server) planArray(ctx context.Context, p *applyPlan, field string, item v1.ApplyItem, spec v1.CreateSessionRequest) error {
	var err error
	if spec.Name, err = specName(field, item.Name, spec.Name); err != nil {
		return err
	}
	req := s.admitRequest(p.u, spec)
	req.Resolve = p.resolver(s)
	arr, elems, err := s.admit.BuildArray(ctx, admit.ArrayRequest{ID: domain.ArrayID(newUUID()), Spec: spec.Array,
		Session: req, ElementID: func(int) domain.SessionID { return domain.SessionID(newUUID()) }})
	if err != nil {
		return at(field+".spec", fromAdmit(err))
	}
	live, err := s.liveArrayNamed(ctx, p.u, arr.Name)
	if err != nil {
		return err
	}
	if live != nil {
		return s.planLiveArray(ctx, p, field, item, arr, elems[0].Session, *live)
	}
	if sess, err := s.liveSessionNamed(ctx, p.u, arr.Name); err != nil {
		return err
	} else if sess != nil {
		e := conflict("you have a live session %q (%s, %s), and a name is one live session or one live array: the file's "+
			"is an array. End the session (sokovan session rm %s) and apply again, or give the file's array another name",
			sess.Name, sess.ID, sess.Status, sess.ID)
		e.Field = field + ".spec.array"
		return e
	}
	if err := s.admit.CheckLimits(ctx, elems[0].Session); err != nil {
		return at(field+".spec", fromAdmit(err))
	}
	item.Action, item.ID, item.Array, item.Count = "created", string(arr.ID), arr.Spec, arr.Count
	at0 := len(p.items)
	p.items = append(p.items, item)
	p.arrays[arr.ID] = arr
	for k, e := range elems {
		p.fresh = append(p.fresh, framework.PendingSession{Session: e.Session, Kernels: e.Kernels})
		de := &dryElement{item: at0, index: e.Session.ArrayIndex, first: k == 0}
		p.elementOf[e.Session.ID] = de
		p.elements = append(p.elements, de)
	}
	p.writes = append(p.writes, func(ctx context.Context) error {
		return at(field+".spec", fromAdmit(s.admit.SubmitArray(ctx, arr, elems)))
	})
	return nil
}

// planLiveArray compares the array a file's object makes with the live
// one of its name, through one live element, which holds the spec every
// element was made from.
func (s *Server) planLiveArray(ctx context.Context, p *applyPlan, field string, item v1.ApplyItem,
	want domain.Array, wantElem domain.Session, live domain.Array) error {
	elems, err := s.store.ArrayElements(ctx, live.ID)
	if err != nil {
		return err
	}
	var liveElem domain.Session
	for _, e := range elems {
		if !e.Status.Terminal() {
			// A listing leaves command and env out; the comparison needs
			// them.
			sk, err := s.store.GetSession(ctx, e.ID)
			if err != nil {
				return err
			}
			liveElem = sk.Session
			break
		}
	}
	if f := arrayDiff(want, wantElem, live, liveElem); f != "" {
		e := conflict("array %q (%s) is live, and an array cannot change once submitted: its %s is not the file's. "+
			"End it (sokovan session rm %s) and apply again, or give the file's array another name",
			live.Name, live.ID, f, live.ID)
		e.Field = field + ".spec." + f
		return e
	}
	item.Action, item.ID, item.Array, item.Count = "unchanged", string(live.ID), live.Spec, live.Count
	p.items = append(p.items, item)
	return nil
}

// liveArrayNamed is the caller's live array of the name (one with a
// live element), nil when there is none. The store keeps a name live on
// one array at a time, and a name is free for a new array only once the
// older ones ended, so the live one is among the newest.
func (s *Server) liveArrayNamed(ctx context.Context, u store.User, name string) (*domain.Array, error) {
	named, err := s.store.ListArrays(ctx, store.ArrayFilter{User: u.Name, Name: name, Limit: maxCandidates})
	if err != nil || len(named) == 0 {
		return nil, err
	}
	sums, err := s.store.ArraySummaries(ctx, arrayIDs(named))
	if err != nil {
		return nil, err
	}
	for _, a := range named {
		if liveCount(sums[a.ID]) > 0 {
			return &a, nil
		}
	}
	return nil, nil
}

// nameNotArray refuses a plain session whose name a live array of the
// caller has: a name is one live session or one live array, so the file
// asks to make the array a session, which cannot be done in place.
func (s *Server) nameNotArray(ctx context.Context, u store.User, field, name string) error {
	a, err := s.liveArrayNamed(ctx, u, name)
	if err != nil || a == nil {
		return err
	}
	e := conflict("%q is your live array %s (%s), and a name is one live session or one live array: the file's session "+
		"has no array. End the array (sokovan session rm %s) and apply again, or give the file's session another name",
		a.Name, a.ID, a.Spec, a.ID)
	e.Field = field + ".spec.array"
	return e
}

// dryItem is where a dry run writes what a new session would wait for:
// the session's item, or an element's own record, which foldElements
// then gives its array's item; nil for a session that is not new.
func (p *applyPlan) dryItem(id domain.SessionID) *v1.ApplyItem {
	if i, ok := p.itemOf[id]; ok {
		return &p.items[i]
	}
	if e, ok := p.elementOf[id]; ok {
		return &e.found
	}
	return nil
}

// foldElements gives each new array's item its elements' rows, in
// index order, and its first element's wait, blockers and estimate.
func (p *applyPlan) foldElements() {
	for _, e := range p.elements {
		it := &p.items[e.item]
		it.Elements = append(it.Elements, v1.ApplyElement{Index: e.index, Wait: e.found.Wait,
			EstimatedStart: e.found.EstimatedStart})
		if e.first {
			it.Wait, it.Blockers, it.EstimatedStart = e.found.Wait, e.found.Blockers, e.found.EstimatedStart
		}
	}
}

// dryArrays puts the new capped arrays with elements among fresh into
// the snapshot, as the store loads a capped array with a pending
// element, none of its elements holding resources yet, so the round
// holds the elements past the cap as it would; it returns them for the
// estimate, whose replay holds the caps too.
func (p *applyPlan) dryArrays(snap *framework.Snapshot, fresh []framework.PendingSession) []domain.Array {
	var arrays []domain.Array
	for _, ps := range fresh {
		a, ok := p.arrays[ps.Session.Array]
		if !ok || a.MaxRunning == 0 {
			continue
		}
		if _, seen := snap.Arrays[a.ID]; seen {
			continue
		}
		if snap.Arrays == nil {
			snap.Arrays = map[domain.ArrayID]framework.ArrayInfo{}
		}
		snap.Arrays[a.ID] = framework.ArrayInfo{Name: a.Name, MaxRunning: a.MaxRunning}
		arrays = append(arrays, a)
	}
	return arrays
}
