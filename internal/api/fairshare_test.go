package api_test

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestFairShareQueueAndUsage: a fairshare group orders its queue by
// decayed use against shares, and queue, why and GET /v1/usage show the
// numbers; users read only their own use.
func TestFairShareQueueAndUsage(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true, Agents: 1})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p2")
		var g v1.Group
		for _, bad := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"fair_share": map[string]any{"half_life": "-1h"}}, "fair_share.half_life"},
			{map[string]any{"fair_share": map[string]any{"shares": map[string]any{"alice": 2}}}, "fair_share.shares"},
			{map[string]any{"fair_share": map[string]any{"shares": map[string]any{"user:alice": -1}}}, "fair_share.shares"},
		} {
			var e struct{ Error v1.Error }
			if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", bad.body, &e); code != http.StatusBadRequest || e.Error.Field != bad.field {
				t.Errorf("%v: %d %+v, want 400 on %s", bad.body, code, e.Error, bad.field)
			}
		}
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"sequencer": "fairshare",
			"fair_share": map[string]any{"half_life": "24h", "shares": map[string]any{"user:carol": 3}}}, &g); code != http.StatusOK {
			t.Fatalf("set fairshare: %d", code)
		}
		if g.Sequencer != "fairshare" || g.FairShare.HalfLife != "86400s" || g.FairShare.Shares["user:carol"] != 3 {
			t.Fatalf("group: %+v", g)
		}
		start := time.Now()
		if _, err := m.Store.RollupUsage(ctx, start); err != nil {
			t.Fatal(err)
		}
		first := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "8"}})
		if err := m.Coordinator.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		// Credit alice's 8 cpu for an hour: the rollup charges open holds
		// up to the time it is given.
		if _, err := m.Store.RollupUsage(ctx, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		a2 := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "8"}})
		b1 := create(t, m, bob, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "8"}})
		var q v1.Queue
		if code := m.Do(m.AdminToken, "GET", "/v1/resource-groups/default/queue", nil, &q); code != http.StatusOK {
			t.Fatalf("queue: %d", code)
		}
		// alice has all the use: U 1, S 1/2 (two projects) → 2^-2; bob
		// none → 1: bob's younger session goes first.
		if len(q.Items) != 2 || q.Items[0].ID != b1.ID || q.Items[1].ID != a2.ID {
			t.Fatalf("queue order: %+v", q.Items)
		}
		fa, fb := q.Items[1].FairShare, q.Items[0].FairShare
		if fa == nil || fb == nil || fb.Factor != 1 || math.Abs(fa.Factor-0.25) > 1e-9 || fa.Usage != 1 || fa.UsageSlot != "cpu" ||
			fa.Shares != 0.5 || fa.HalfLife != "86400s" {
			t.Fatalf("factors: alice %+v, bob %+v", fa, fb)
		}
		var why v1.Why
		if code := m.Do(alice, "GET", "/v1/sessions/"+a2.ID+"/why", nil, &why); code != http.StatusOK || why.FairShare == nil ||
			why.FairShare.Factor != fa.Factor {
			t.Fatalf("why: %d %+v", code, why.FairShare)
		}
		// About 8 cpu-hours, decayed by under a half-life.
		if h := fa.DecayedHours["cpu"]; h < 4 || h > 8.1 {
			t.Errorf("alice's decayed cpu-hours %v", h)
		}

		var rep v1.UsageReport
		if code := m.Do(m.AdminToken, "GET", "/v1/usage?since=1d&by=user&slot=cpu", nil, &rep); code != http.StatusOK {
			t.Fatalf("usage: %d", code)
		}
		if len(rep.Items) != 1 || rep.Items[0].Key != "alice" || math.Abs(rep.Items[0].Hours-8) > 0.1 {
			t.Fatalf("admin's usage report: %+v", rep.Items)
		}
		m.Do(bob, "GET", "/v1/usage?by=project", nil, &rep)
		if len(rep.Items) != 0 {
			t.Errorf("bob reads others' use: %+v", rep.Items)
		}
		m.Do(alice, "GET", "/v1/usage?by=project", nil, &rep)
		if len(rep.Items) != 2 || rep.Items[0].Key != "p1" {
			t.Errorf("alice's own use by project: %+v", rep.Items)
		}
		if code := m.Do(bob, "GET", "/v1/usage?user=alice", nil, nil); code != http.StatusForbidden {
			t.Errorf("bob asking for alice's use: %d, want 403", code)
		}
		for _, bad := range []string{"since=x", "by=host", "slot=nope", "step=30m"} {
			if code := m.Do(m.AdminToken, "GET", "/v1/usage?"+bad, nil, nil); code != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", bad, code)
			}
		}
		_ = first
	})
}
