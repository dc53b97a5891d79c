package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// TestAgentDevices: on an agent with two fake GPUs, two sessions asking
// one each get distinct devices, shown on their kernels and, with their
// holders, on the agent; a third waits, and why names the agent and its
// free devices; a fraction of a whole device is refused naming the field.
func TestAgentDevices(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Agents: 1, AgentDevices: "cuda:2"})
		alice := m.User("alice", "user", "p1")
		gpu := map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1", "mem": "1g", "cuda.device": "1"}}
		s1, s2 := create(t, m, alice, gpu), create(t, m, alice, gpu)
		s1 = waitStatus(t, m, alice, s1.ID, "RUNNING")
		s2 = waitStatus(t, m, alice, s2.ID, "RUNNING")
		d1, d2 := s1.Kernels[0].Devices, s2.Kernels[0].Devices
		if len(d1) != 1 || len(d2) != 1 || d1[0].Device == d2[0].Device || d1[0].Share != "1" {
			t.Fatalf("kernel devices %+v and %+v, want one distinct whole device each", d1, d2)
		}

		s3 := create(t, m, alice, gpu)
		apitest.Eventually(t, 20*time.Second, "a round to skip the third session", func() bool {
			var hist v1.List[v1.History]
			m.Do(alice, "GET", "/v1/sessions/"+s3.ID+"/history", nil, &hist)
			return len(hist.Items) > 0
		})
		var why v1.Why
		if code := m.Do(alice, "GET", "/v1/sessions/"+s3.ID+"/why", nil, &why); code != 200 || len(why.Blockers) != 1 {
			t.Fatalf("why: %d %+v", code, why)
		}
		b := why.Blockers[0]
		if b.Kind != "capacity" || b.Slot != "cuda.device" || !strings.Contains(b.Message, "agent-0 has 0 of 2 devices free") {
			t.Errorf("blocker %+v, want capacity on cuda.device naming agent-0's devices", b)
		}

		for _, tc := range []struct {
			token   string
			kernels bool
		}{{m.AdminToken, true}, {alice, false}} {
			var a v1.Agent
			if code := m.Do(tc.token, "GET", "/v1/agents/agent-0", nil, &a); code != 200 || len(a.Devices) != 2 {
				t.Fatalf("agent: %d %+v", code, a)
			}
			held := map[string]string{}
			for _, d := range a.Devices {
				if d.Free != "0" || len(d.Holders) != 1 || d.Holders[0].Share != "1" {
					t.Errorf("device %+v, want held whole by one kernel", d)
					continue
				}
				held[d.ID] = d.Holders[0].Kernel
			}
			want := map[string]string{d1[0].Device: "", d2[0].Device: ""}
			if tc.kernels {
				want = map[string]string{d1[0].Device: s1.Kernels[0].ID, d2[0].Device: s2.Kernels[0].ID}
			}
			for dev, k := range want {
				if held[dev] != k {
					t.Errorf("device %s held by %q, want %q (admin view: %t)", dev, held[dev], k, tc.kernels)
				}
			}
		}
		var list v1.List[v1.Agent]
		if m.Do(m.AdminToken, "GET", "/v1/agents", nil, &list); len(list.Items) != 1 || len(list.Items[0].Devices) != 2 {
			t.Errorf("agent list: %+v", list.Items)
		}

		code, raw := m.Raw(alice, "POST", "/v1/sessions", map[string]any{"image": "sleep",
			"resources": map[string]string{"cuda.device": "0.5"}})
		if code != 400 || !strings.Contains(string(raw), "resources.cuda.device") {
			t.Errorf("half a device: %d %s, want 400 naming resources.cuda.device", code, raw)
		}

		// Ending a session frees its device for the one waiting.
		if code := m.Do(alice, "DELETE", "/v1/sessions/"+s1.ID, nil, nil); code != 202 {
			t.Fatalf("terminate: %d", code)
		}
		s3 = waitStatus(t, m, alice, s3.ID, "RUNNING")
		if got := s3.Kernels[0].Devices; len(got) != 1 || got[0].Device != d1[0].Device {
			t.Errorf("third session got %+v, want %s, the device the first freed", got, d1[0].Device)
		}
	})
}
