package agentgw_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// An agent that registers into a removed resource group is refused with
// 409 naming the group, and nothing is stored.
func TestRegisterIntoARemovedGroupIsRefused(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	if err := m.st.PutResourceGroup(m.ctx, domain.ResourceGroup{Name: "old", State: domain.GroupDraining,
		Sequencer: "fifo", Selector: "dispersed", HeadOfLine: domain.HOLSkip, MaxRetries: 3,
		Timeouts: domain.DefaultTimeouts()}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.st.RemoveResourceGroup(m.ctx, "old", time.Now()); err != nil {
		t.Fatal(err)
	}
	code, msg := m.post("/v1/agent/register", agentrpc.Register{ID: "y", ResourceGroup: "old", Address: "http://127.0.0.1:1",
		Architecture: "x86_64", Runtime: "sim", Capacity: map[string]string{"cpu": "4", "mem": "8g"}})
	if code != http.StatusConflict || !strings.Contains(msg, "resource group old was removed") {
		t.Fatalf("register into a removed group: %d %q, want 409 naming it", code, msg)
	}
	if _, err := m.st.GetAgent(m.ctx, "y"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused agent was stored: %v", err)
	}
}
