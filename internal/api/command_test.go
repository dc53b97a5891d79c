package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestCreateRefusesCommandNoAgentRuns: a command is refused at submit,
// with 400 naming command and nothing written, when the group has agents
// and none of them runs a session's own command; once one does, or
// without a command, the same session is accepted.
func TestCreateRefusesCommandNoAgentRuns(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		ctx := context.Background()
		if err := m.Store.PutResourceGroup(ctx, domain.ResourceGroup{Name: "strict", State: domain.GroupActive,
			Sequencer: "fifo", Selector: "concentrated", HeadOfLine: domain.HOLSkip}); err != nil {
			t.Fatal(err)
		}
		capacity, _ := m.Slots.ParseSlots(map[string]string{"cpu": "4", "mem": "4g"})
		register := func(id string, allows bool) {
			t.Helper()
			if _, err := m.Store.RegisterAgent(ctx, domain.Agent{ID: domain.AgentID(id), ResourceGroup: "strict",
				Address: "127.0.0.1:0", Architecture: "x86_64", Runtime: "process", Status: domain.AgentAlive,
				Schedulable: true, Capacity: capacity, AllowsCommand: allows}, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		register("strict-0", false)
		body := map[string]any{"image": "sleep", "resource_group": "strict", "command": []string{"sh", "-c", "echo hello"}}

		before := stored(t, m)
		code, raw := m.Raw(alice, "POST", "/v1/sessions", body)
		var e v1.ErrorResponse
		if err := json.Unmarshal(raw, &e); err != nil || code != http.StatusBadRequest || e.Error.Field != "command" ||
			!strings.Contains(e.Error.Message, "--allow-command") {
			t.Fatalf("command with no agent to run it: %d %s; want 400 naming command", code, raw)
		}
		if after := stored(t, m); after != before {
			t.Errorf("the refused submit wrote: %+v → %+v", before, after)
		}
		delete(body, "command")
		if code, raw := m.Raw(alice, "POST", "/v1/sessions", body); code != http.StatusCreated {
			t.Errorf("without a command: %d %s", code, raw)
		}

		register("strict-1", true)
		body["command"] = []string{"sh", "-c", "echo hello"}
		if code, raw := m.Raw(alice, "POST", "/v1/sessions", body); code != http.StatusCreated {
			t.Errorf("command once an agent runs it: %d %s", code, raw)
		}
		var agents v1.List[v1.Agent]
		m.Do(alice, "GET", "/v1/agents?resource_group=strict", nil, &agents)
		got := map[string]bool{}
		for _, a := range agents.Items {
			got[a.ID] = a.AllowsCommand
		}
		if got["strict-0"] || !got["strict-1"] {
			t.Errorf("allows_command by agent = %v; want strict-1 only", got)
		}
	})
}
