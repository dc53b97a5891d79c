package admit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// CreateArray stores the elements as the store would, each under the
// same limits, and refuses all of them if one is refused.
func (m *memStore) CreateArray(ctx context.Context, _ domain.Array, elems []store.NewSession, limits ...store.PendingLimit) error {
	before := len(m.created)
	for _, e := range elems {
		if err := m.CreateSession(ctx, e.Session, e.Kernels, limits...); err != nil {
			m.created = m.created[:before]
			return err
		}
	}
	return nil
}

func arrayRequest(spec string) admit.ArrayRequest {
	r := request()
	r.Name = "sweep"
	return admit.ArrayRequest{ID: "arr", Spec: spec, Session: r,
		ElementID: func(i int) domain.SessionID { return domain.SessionID(fmt.Sprintf("s-%d", i)) }}
}

func TestBuildArray(t *testing.T) {
	st, m := newStore(), new(marks)
	a, _ := newAdmitter(st, m)
	arr, elems, err := a.BuildArray(context.Background(), arrayRequest("1,3,5-9:2%2"))
	if err != nil {
		t.Fatalf("BuildArray: %v", err)
	}
	if arr.Count != 5 || arr.MaxRunning != 2 || arr.Name != "sweep" || arr.Owner != alice {
		t.Fatalf("array = %+v, want 5 elements capped at 2, named sweep, alice's", arr)
	}
	for i, want := range []int{1, 3, 5, 7, 9} {
		s := elems[i].Session
		if s.ID != domain.SessionID(fmt.Sprintf("s-%d", want)) || s.Name != fmt.Sprintf("sweep[%d]", want) ||
			s.Array != "arr" || s.ArrayIndex != want || len(elems[i].Kernels) != 1 ||
			elems[i].Kernels[0].SessionID != s.ID {
			t.Errorf("element %d = %s %q %q[%d], kernels %+v", i, s.ID, s.Name, s.Array, s.ArrayIndex, elems[i].Kernels)
		}
		wantEnv := map[string]string{"SOKOVAN_ARRAY_INDEX": fmt.Sprint(want), "SOKOVAN_ARRAY_COUNT": "5", "SOKOVAN_ARRAY_ID": "arr"}
		for k, v := range wantEnv {
			if s.Env[k] != v {
				t.Errorf("element %d env %s = %q, want %q", i, k, s.Env[k], v)
			}
		}
	}
	if err := a.SubmitArray(context.Background(), arr, elems); err != nil {
		t.Fatalf("SubmitArray: %v", err)
	}
	if len(st.created) != 5 || *m != 1 {
		t.Errorf("stored %d sessions with %d marks, want 5 and 1", len(st.created), *m)
	}
}

func TestBuildArrayRefusals(t *testing.T) {
	tests := []struct {
		name  string
		req   func(*admit.ArrayRequest)
		class admit.Class
		field string
		msg   string
	}{
		{"backwards range", func(r *admit.ArrayRequest) { r.Spec = "5-1" }, admit.BadRequest, "array", "backwards"},
		{"cap zero", func(r *admit.ArrayRequest) { r.Spec = "0-99%0" }, admit.BadRequest, "array", "at least 1"},
		{"too many", func(r *admit.ArrayRequest) { r.Spec = "0-10000" }, admit.BadRequest, "array", "more than 10000"},
		{"no name", func(r *admit.ArrayRequest) { r.Session.Name = "" }, admit.BadRequest, "name", "needs a name"},
		{"brackets in the name", func(r *admit.ArrayRequest) { r.Session.Name = "a[1]" }, admit.BadRequest, "name", "[ or ]"},
		{"the session's own checks", func(r *admit.ArrayRequest) { r.Session.Image = "" }, admit.BadRequest, "image", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore()
			a, _ := newAdmitter(st, new(marks))
			req := arrayRequest("0-9")
			tt.req(&req)
			_, _, err := a.BuildArray(context.Background(), req)
			checkRefusalSays(t, err, tt.class, tt.field, tt.msg)
			if len(st.created) != 0 {
				t.Errorf("stored %d sessions", len(st.created))
			}
		})
	}
}

func TestSubmitArrayPendingLimit(t *testing.T) {
	st := newStore()
	st.policies["user/alice"] = domain.Policy{Scope: domain.ScopeUser, Name: "alice", MaxPendingSessions: 3}
	a, _ := newAdmitter(st, new(marks))
	arr, elems, err := a.BuildArray(context.Background(), arrayRequest("0-3"))
	if err != nil {
		t.Fatalf("BuildArray: %v", err)
	}
	err = a.SubmitArray(context.Background(), arr, elems)
	checkRefusalSays(t, err, admit.TooMany, "array", "max_pending_sessions 3")
	if len(st.created) != 0 {
		t.Errorf("stored %d sessions of a refused array", len(st.created))
	}
}

func TestSessionNameShapedAsElement(t *testing.T) {
	a, _ := newAdmitter(newStore(), new(marks))
	r := request()
	r.Name = "sweep[3]"
	_, _, err := a.Build(context.Background(), r)
	checkRefusalSays(t, err, admit.BadRequest, "name", "array's element")
}

// checkRefusalSays is checkRefusal with a message that need only hold msg.
func checkRefusalSays(t *testing.T, err error, class admit.Class, field, msg string) {
	t.Helper()
	var e *admit.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a refusal", err)
	}
	if e.Class != class || e.Field != field || !strings.Contains(e.Message, msg) {
		t.Errorf("got %s at %q: %q; want %s at %q saying %q", e.Class, e.Field, e.Message, class, field, msg)
	}
}
