package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
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
