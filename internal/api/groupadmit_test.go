package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// drainFirst is a fault injected at the store's edge: it drains the
// session's group just before passing CreateSession on, so the drain
// lands between the API's early read of the group and the store's
// transaction.
type drainFirst struct {
	api.Store
	real store.Store
}

func (d drainFirst) CreateSession(ctx context.Context, s domain.Session, ks []domain.Kernel, limits ...store.PendingLimit) error {
	g, err := d.real.GetResourceGroup(ctx, s.ResourceGroup)
	if err != nil {
		return err
	}
	g.State = domain.GroupDraining
	if err := d.real.PutResourceGroup(ctx, g); err != nil {
		return err
	}
	return d.Store.CreateSession(ctx, s, ks, limits...)
}

// A group drained after the submit's early check still refuses it: the
// store's answer becomes the same 409 naming DRAINING, and nothing is
// stored.
func TestSubmitRacingDrainIsRefused(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		api.WrapStore(m.Server, func(s api.Store) api.Store { return drainFirst{Store: s, real: m.Store} })
		before := stored(t, m)
		var e v1.ErrorResponse
		code := m.Do(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}}, &e)
		if code != http.StatusConflict || e.Error.Field != "resource_group" || !strings.Contains(e.Error.Message, "DRAINING") {
			t.Fatalf("submit racing a drain: %d %+v; want 409 on resource_group naming DRAINING", code, e.Error)
		}
		if stored(t, m) != before {
			t.Fatalf("the refused submit stored a session")
		}
	})
}
