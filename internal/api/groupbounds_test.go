package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// A bound a PUT leaves out takes the default, the shared group_defaults'
// where given; one given as "0s" is no bound and stays so (issue 32 item
// 11: "0s" is not "use the default").
func TestGroupBoundsLeftOutOrZero(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	m.Coordinator.Configure(m.Coordinator.Config(),
		coordinator.GroupDefaults{Timeouts: domain.Timeouts{Pending: 2 * time.Hour, Creating: time.Minute}})
	for _, tc := range []struct {
		name      string
		group     string
		body      map[string]any
		pending   string
		creating  string
		scheduled string
	}{
		{"left out", "g-out", map[string]any{}, "7200s", "60s", "900s"},
		{"0s", "g-zero", map[string]any{"timeouts": map[string]string{"pending": "0s", "creating": "0s"}}, "0s", "0s", "900s"},
	} {
		var g v1.Group
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/"+tc.group, tc.body, &g); code != http.StatusCreated {
			t.Fatalf("%s: create: %d", tc.name, code)
		}
		if got := g.Timeouts; got.Pending != tc.pending || got.Creating != tc.creating || got.Scheduled != tc.scheduled {
			t.Errorf("%s: pending %s, creating %s, scheduled %s; want %s, %s, %s", tc.name,
				got.Pending, got.Creating, got.Scheduled, tc.pending, tc.creating, tc.scheduled)
		}
		bound, err := m.Coordinator.Bound(t.Context(), g.Name, domain.SessionPending)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := time.ParseDuration(tc.pending); bound != want {
			t.Errorf("%s: the coordinator bounds PENDING at %v, the API says %s", tc.name, bound, tc.pending)
		}
	}
}
