package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestSubmitNeverFits: a session larger than a policy allows at once is
// refused at submit, naming the slot and the policy; one that became too
// large for its quota later says it can never fit; why on an ended
// session repeats how it ended.
func TestSubmitNeverFits(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	put := func(path string, body v1.PolicyRequest) {
		t.Helper()
		if code := m.Do(m.AdminToken, "PUT", path, body, nil); code != http.StatusOK {
			t.Fatalf("PUT %s: %d", path, code)
		}
	}
	put("/v1/policies/project/p1", v1.PolicyRequest{MaxSlots: map[string]string{"cpu": "5"}})

	// 2 kernels × 3 cpu = 6 in all, over the project's 5.
	code, raw := m.Raw(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep", "cluster_size": 2,
		"cluster_mode": "multi-node", "resources": map[string]string{"cpu": "3"}})
	e := errorOf(t, raw)
	if code != http.StatusBadRequest || e.Field != "resources.cpu" || !strings.Contains(e.Message, "project p1") ||
		!strings.Contains(e.Message, "6 cpu in all (2 kernels × 3)") {
		t.Errorf("over the project's max_slots: %d %+v, want 400 naming resources.cpu and the policy", code, e)
	}
	var list v1.SessionPage
	m.Do(alice, "GET", "/v1/sessions", nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("a refused session was stored: %+v", list.Items)
	}

	s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "3"}})
	put("/v1/policies/user/alice", v1.PolicyRequest{MaxSlots: map[string]string{"cpu": "2"}})
	var why v1.Why
	m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/why", nil, &why)
	if len(why.Blockers) != 1 || why.Blockers[0].Kind != "quota" || !why.Blockers[0].ExceedsCapacity ||
		!strings.Contains(why.Blockers[0].Message, "can never fit this quota") {
		t.Errorf("why, over the quota itself: %+v", why.Blockers)
	}

	if code := m.Do(alice, "DELETE", "/v1/sessions/"+s.ID, nil, nil); code != http.StatusAccepted {
		t.Fatalf("DELETE: %d", code)
	}
	why = v1.Why{}
	m.Do(alice, "GET", "/v1/sessions/"+s.ID+"/why", nil, &why)
	if why.Status != "CANCELLED" || why.Ended == nil || why.Ended.Outcome != "cancelled" ||
		!strings.Contains(why.Ended.Reason, "terminated by alice") {
		t.Errorf("why on an ended session: %+v (ended %+v)", why, why.Ended)
	}
}

// TestSubmitLargerThanAnyAgent: a session no agent of its group could ever hold,
// or whose image no agent there could run, is refused at submit with a
// 400 naming the field, and nothing is stored; it does not wait for ever.
func TestSubmitLargerThanAnyAgent(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true, AgentCapacity: map[string]string{"cpu": "2", "mem": "16g"}})
	alice := m.User("alice", "user", "p1")
	if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/proc", map[string]any{}, nil); code != http.StatusCreated {
		t.Fatalf("PUT group: %d", code)
	}
	capacity, err := m.Slots.ParseSlots(map[string]string{"cpu": "8", "mem": "16g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Store.RegisterAgent(t.Context(), domain.Agent{ID: "p1", ResourceGroup: "proc",
		Address: "127.0.0.1:0", Architecture: "x86_64", Runtime: "process", Schedulable: true, Capacity: capacity,
		Catalog: []string{"exit:{0-255}", "sleep"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	before := stored(t, m)
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
		msg   string
	}{
		{"64 cpu on 2-cpu agents", map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "64"}},
			"resources.cpu", "requests 64 per kernel, more than any agent of resource group default has (largest: 2)"},
		{"exit code above 255", map[string]any{"image": "exit:256", "resource_group": "proc"}, "image", `run image "exit:256"`},
	} {
		code, raw := m.Raw(alice, "POST", "/v1/sessions", tc.body)
		e := errorOf(t, raw)
		if code != http.StatusBadRequest || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %d %+v, want 400 at %s saying %q", tc.name, code, e, tc.field, tc.msg)
		}
	}
	if after := stored(t, m); after != before {
		t.Errorf("the refused submits wrote: %+v → %+v", before, after)
	}
}

// TestSubmitUnknownImage: an image that no agent of the group could run
// is refused at submit when every agent there runs only its catalog; an
// agent that pulls from registries could run anything.
func TestSubmitUnknownImage(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/proc", map[string]any{}, nil); code != http.StatusCreated {
			t.Fatalf("PUT group: %d", code)
		}
		capacity, err := m.Slots.ParseSlots(map[string]string{"cpu": "8", "mem": "16g"})
		if err != nil {
			t.Fatal(err)
		}
		register := func(id, runtime string, catalog []string) {
			t.Helper()
			if _, err := m.Store.RegisterAgent(t.Context(), domain.Agent{ID: domain.AgentID(id), ResourceGroup: "proc",
				Address: "127.0.0.1:0", Architecture: "x86_64", Runtime: runtime, Schedulable: true, Capacity: capacity,
				Catalog: catalog}, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		// An empty group may yet get an agent that can.
		create(t, m, alice, map[string]any{"image": "python:3.13", "resource_group": "proc"})
		register("p1", "process", []string{"exit:*", "sleep"})
		register("p2", "process", []string{"http-echo", "sleep"})

		code, raw := m.Raw(alice, "POST", "/v1/sessions", map[string]any{"image": "python:3.13", "resource_group": "proc"})
		e := errorOf(t, raw)
		if code != http.StatusBadRequest || e.Field != "image" || !strings.Contains(e.Message, "exit:…, http-echo, sleep") {
			t.Errorf("unknown image: %d %+v, want 400 naming image and what the agents run", code, e)
		}
		for _, img := range []string{"sleep", "exit:3", "http-echo"} {
			create(t, m, alice, map[string]any{"image": img, "resource_group": "proc"})
		}
		// The default group's agents report no catalog.
		create(t, m, alice, map[string]any{"image": "python:3.13"})

		register("d1", "docker", nil)
		create(t, m, alice, map[string]any{"image": "python:3.13", "resource_group": "proc"})
	})
}
