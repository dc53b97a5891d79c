package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestWhyNamesNoOtherUsersSession: under head-of-line block, a user's
// session waits behind the head of the queue; why says so, with the
// position, but names the head only to its owner and to admins.
func TestWhyNamesNoOtherUsersSession(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	ctx := context.Background()
	g, err := m.Store.GetResourceGroup(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	g.HeadOfLine = domain.HOLBlock
	if err := m.Store.PutResourceGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p2")
	// Only a cordoned agent could hold the head's 64 cpu: it is admitted,
	// and waits, while the one behind would fit the 8-cpu agent.
	big, err := m.Slots.ParseSlots(map[string]string{"cpu": "64", "mem": "16g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Store.RegisterAgent(ctx, domain.Agent{ID: "cordoned", ResourceGroup: "default", Address: "127.0.0.1:0",
		Architecture: "x86_64", Capacity: big}, time.Now()); err != nil {
		t.Fatal(err)
	}
	head := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]any{"cpu": "64"}})
	behind := create(t, m, bob, map[string]any{"image": "sleep", "resources": map[string]any{"cpu": "1"}})

	var why struct {
		Blockers []struct{ Kind, Scope, Message string }
	}
	m.Do(bob, "GET", "/v1/sessions/"+behind.ID+"/why", nil, &why)
	found := false
	for _, b := range why.Blockers {
		if b.Kind != "queue_position" {
			continue
		}
		found = true
		if strings.Contains(b.Scope+b.Message, head.ID) || b.Scope != "another session" || !strings.Contains(b.Message, "number 2") {
			t.Errorf("bob's why: %+v, want the head unnamed and bob second in the queue", b)
		}
	}
	if !found {
		t.Fatalf("bob's why has no queue_position blocker: %+v", why.Blockers)
	}
	m.Do(m.AdminToken, "GET", "/v1/sessions/"+behind.ID+"/why", nil, &why)
	if len(why.Blockers) == 0 || !strings.Contains(why.Blockers[0].Scope, head.ID) {
		t.Errorf("admin's why: %+v, want the head named", why.Blockers)
	}
}

// TestAgentAddressesAreForAdmins: the agents' RPC addresses are the way to
// their own API; users see the agents without them.
func TestAgentAddressesAreForAdmins(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{Manual: true})
	alice := m.User("alice", "user", "p1")
	var list struct{ Items []v1.Agent }
	m.Do(alice, "GET", "/v1/agents", nil, &list)
	var one v1.Agent
	m.Do(alice, "GET", "/v1/agents/agent-0", nil, &one)
	for _, a := range append(list.Items, one) {
		if a.Address != "" {
			t.Errorf("a user sees agent %s at %q", a.ID, a.Address)
		}
	}
	m.Do(m.AdminToken, "GET", "/v1/agents", nil, &list)
	if len(list.Items) == 0 || list.Items[0].Address == "" {
		t.Errorf("the admin sees no address: %+v", list.Items)
	}
}
