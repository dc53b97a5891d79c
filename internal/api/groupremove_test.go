package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// DELETE /v1/resource-groups/{name} removes only a DRAINING group without
// live sessions or agents, refusing with 409 naming why (and changing
// nothing) otherwise; a removed group is gone from every read and refuses
// submits, until a PUT of its name creates a new group.
func TestRemoveResourceGroup(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		ctx := context.Background()
		var g v1.Group
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/gpu", map[string]any{}, &g); code != http.StatusCreated {
			t.Fatalf("create gpu: %d", code)
		}
		// A live session in the group, stored as a submit stores it.
		now := time.Now().UTC().Truncate(time.Microsecond)
		sess := domain.Session{ID: "s-gpu", Owner: domain.Owner{User: "alice", Project: "p1", Domain: "default"},
			Type: domain.TypeBatch, Image: "sleep", Architecture: "x86_64", ResourceGroup: "gpu",
			ClusterMode: domain.SingleNode, ClusterSize: 1, Requested: m.Slots.NewVec(), Status: domain.SessionPending,
			CreatedAt: now, StatusChangedAt: now}
		if err := m.Store.CreateSession(ctx, sess, []domain.Kernel{{ID: "s-gpu-k0", SessionID: "s-gpu", ClusterRole: domain.RoleMain,
			Image: "sleep", Architecture: "x86_64", Requested: m.Slots.NewVec(), Status: domain.KernelPending, StatusChangedAt: now}}); err != nil {
			t.Fatal(err)
		}

		refused := func(what, token, name string, code int, field, text string) {
			t.Helper()
			var e v1.ErrorResponse
			got := m.Do(token, "DELETE", "/v1/resource-groups/"+name, nil, &e)
			if got != code || e.Error.Field != field || !strings.Contains(e.Error.Message, text) {
				t.Errorf("%s: %d %+v; want %d on %q naming %q", what, got, e.Error, code, field, text)
			}
		}
		refused("a user", alice, "gpu", http.StatusForbidden, "", "admin")
		refused("ACTIVE", m.AdminToken, "gpu", http.StatusConflict, "state", "ACTIVE")
		refused("the default group", m.AdminToken, "default", http.StatusConflict, "name", "default group")
		refused("no such group", m.AdminToken, "nope", http.StatusNotFound, "", "nope")
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/gpu", map[string]any{"state": "DRAINING"}, &g); code != http.StatusOK {
			t.Fatalf("drain gpu: %d", code)
		}
		refused("a live session", m.AdminToken, "gpu", http.StatusConflict, "", "1 live sessions")
		if m.Do(alice, "GET", "/v1/resource-groups/gpu", nil, &g); g.State != "DRAINING" {
			t.Fatalf("a refused removal changed the group: %+v", g)
		}
		if _, err := m.Store.TransitionSessions(ctx, []domain.SessionID{"s-gpu"}, []domain.SessionStatus{domain.SessionPending},
			domain.Transition{Session: domain.SessionCancelled, Kernel: domain.KernelCancelled}, "cancelled", now); err != nil {
			t.Fatal(err)
		}
		if code := m.Do(m.AdminToken, "DELETE", "/v1/resource-groups/gpu", nil, &g); code != http.StatusOK || g.State != "REMOVED" {
			t.Fatalf("remove: %d %+v", code, g)
		}

		if code := m.Do(alice, "GET", "/v1/resource-groups/gpu", nil, nil); code != http.StatusNotFound {
			t.Errorf("GET a removed group: %d, want 404", code)
		}
		var list v1.List[v1.Group]
		m.Do(alice, "GET", "/v1/resource-groups", nil, &list)
		for _, g := range list.Items {
			if g.Name == "gpu" {
				t.Errorf("a removed group is listed: %+v", g)
			}
		}
		var e v1.ErrorResponse
		if code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "resource_group": "gpu"}, &e); code != http.StatusBadRequest || e.Error.Field != "resource_group" {
			t.Errorf("submit to a removed group: %d %+v; want 400 on resource_group", code, e.Error)
		}
		e = v1.ErrorResponse{}
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"state": "REMOVED"}, &e); code != http.StatusBadRequest || e.Error.Field != "state" {
			t.Errorf("PUT state REMOVED: %d %+v; want 400 on state", code, e.Error)
		}
		refused("removed already", m.AdminToken, "gpu", http.StatusNotFound, "", "gpu")
		// Its ended session still names it.
		if s, err := m.Store.GetSession(ctx, "s-gpu"); err != nil || s.Session.ResourceGroup != "gpu" {
			t.Errorf("ended session of a removed group: %+v %v", s.Session, err)
		}
		if _, err := m.Store.GetResourceGroup(ctx, "gpu"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("store still shows the group: %v", err)
		}
		// Remove ends the group, not its name: a PUT creates a new one,
		// with the defaults of a new group, that takes sessions.
		g = v1.Group{}
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/gpu", map[string]any{}, &g); code != http.StatusCreated || g.State != "ACTIVE" {
			t.Errorf("PUT a removed group's name: %d %+v; want 201 and a new ACTIVE group", code, g)
		}
		m.RegisterAgent("gpu-0", "gpu", map[string]string{"cpu": "2", "mem": "4g"})
		if code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "resource_group": "gpu"}, nil); code != http.StatusCreated {
			t.Errorf("submit to the group created again: %d, want 201", code)
		}
	})
}
