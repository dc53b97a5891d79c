package admit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// ArrayRequest is an array as its submitter asks for it: one session
// request, repeated for every index of Spec.
type ArrayRequest struct {
	ID domain.ArrayID
	// Spec is SLURM's --array syntax ("0-99%10", "1,3,5-9:2%4").
	Spec string
	// Session is every element's request; its Name is the array's name,
	// which is required, and its ID is left out: ElementID names each.
	Session   Request
	ElementID func(index int) domain.SessionID
}

// BuildArray checks an array request completely and turns it into the
// records to store: the array and its PENDING elements. The request is
// admitted once, as a session; each element is that session with its own
// id, its name name[index] and SOKOVAN_ARRAY_INDEX, SOKOVAN_ARRAY_COUNT
// and SOKOVAN_ARRAY_ID in its environment. It reads the store but never
// writes.
func (a *Admitter) BuildArray(ctx context.Context, req ArrayRequest) (domain.Array, []store.NewSession, error) {
	fail := func(e *Error) (domain.Array, []store.NewSession, error) { return domain.Array{}, nil, e }
	if req.ID == "" || req.ElementID == nil {
		return domain.Array{}, nil, errors.New("admit: an array request needs its id and ElementID")
	}
	spec, err := domain.ParseArraySpec(req.Spec)
	if err != nil {
		return fail(invalid("array", "%v", err))
	}
	name := req.Session.Name
	if strings.TrimSpace(name) == "" {
		return fail(invalid("name", "an array needs a name: its elements are called name[index]"))
	}
	if strings.ContainsAny(name, "[]") {
		return fail(invalid("name", "an array's name may not hold [ or ]: its elements are called name[index]"))
	}
	// The template is admitted without a name, since each element gets
	// its own, and with the first element's id.
	tmpl := req.Session
	tmpl.Name, tmpl.ID = "", req.ElementID(spec.Indexes[0])
	if e := CleanText("name", name, maxNameLen-len("[1000000]")); e != nil {
		return fail(e)
	}
	if len(tmpl.Env)+3 > maxEnvVars {
		return fail(invalid("env", "an array's elements take 3 variables of their own: at most %d", maxEnvVars-3))
	}
	sess, _, err := a.Build(ctx, tmpl)
	if err != nil {
		return domain.Array{}, nil, err
	}
	arr := domain.Array{ID: req.ID, Name: name, Owner: sess.Owner, Spec: req.Spec, Count: len(spec.Indexes),
		MaxRunning: spec.MaxRunning, CreatedAt: sess.CreatedAt}
	count := strconv.Itoa(arr.Count)
	out := make([]store.NewSession, len(spec.Indexes))
	for i, idx := range spec.Indexes {
		e := sess
		e.ID, e.Name, e.Array, e.ArrayIndex = req.ElementID(idx), domain.ArrayElementName(name, idx), arr.ID, idx
		// A microsecond apart (the precision stored), so first-come
		// sequencers take the elements in index order rather than by
		// their random ids.
		e.CreatedAt = sess.CreatedAt.Add(time.Duration(i) * time.Microsecond)
		e.StatusChangedAt = e.CreatedAt
		e.Env = make(map[string]string, len(sess.Env)+3)
		maps.Copy(e.Env, sess.Env)
		e.Env[domain.EnvArrayIndex], e.Env[domain.EnvArrayCount], e.Env[domain.EnvArrayID] = strconv.Itoa(idx), count, string(arr.ID)
		out[i] = store.NewSession{Session: e, Kernels: Kernels(e, e.CreatedAt)}
	}
	return arr, out, nil
}

// SubmitArray stores an array BuildArray made, under its owner's
// policies counted for every element, and asks for a scheduling round.
func (a *Admitter) SubmitArray(ctx context.Context, arr domain.Array, elements []store.NewSession) error {
	if len(elements) == 0 {
		return errors.New("admit: an array without elements")
	}
	policies, err := a.policies(ctx, arr.Owner)
	if err != nil {
		return err
	}
	// Every element asks what the first does.
	if e := a.hardLimits(elements[0].Session, policies); e != nil {
		return e
	}
	if err := a.store.CreateArray(ctx, arr, elements, pendingCaps(policies)...); err != nil {
		var full *store.LimitError
		if errors.As(err, &full) {
			return &Error{Class: TooMany, Field: "array", Message: fmt.Sprintf(
				"%s %s has %d PENDING sessions; %d more would pass its policy's max_pending_sessions %d; "+
					"submit fewer elements, or wait for some to start", full.Limit.Scope, full.Limit.Name, full.Pending,
				len(elements), full.Limit.Max)}
		}
		if errors.Is(err, store.ErrNameTaken) {
			return conflict("name", "you already have a live session or array named %q; end it, or choose another name", arr.Name)
		}
		return storeRefusal(err)
	}
	if a.marker != nil {
		a.marker.Mark()
	}
	return nil
}
