package admit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// These tests drive admission over an in-memory Store that keeps the
// real store's contract where admission relies on it: PENDING sessions
// counted per cap, names unique per owner among live sessions, a closed
// group refused at creation.

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return now }

type memStore struct {
	groups   map[string]domain.ResourceGroup
	policies map[string]domain.Policy // by scope/name
	agents   []domain.Agent
	created  []domain.Session
	// closeOnCreate makes the group DRAINING between Build and Submit.
	closeOnCreate bool
}

func newStore() *memStore {
	return &memStore{groups: map[string]domain.ResourceGroup{
		"default": {Name: "default", State: domain.GroupActive},
	}, policies: map[string]domain.Policy{}}
}

func (m *memStore) GetResourceGroup(_ context.Context, name string) (domain.ResourceGroup, error) {
	g, ok := m.groups[name]
	if !ok {
		return g, store.ErrNotFound
	}
	return g, nil
}

func (m *memStore) GetPolicy(_ context.Context, scope domain.PolicyScope, name string) (domain.Policy, error) {
	p, ok := m.policies[string(scope)+"/"+name]
	if !ok {
		return p, store.ErrNotFound
	}
	return p, nil
}

func (m *memStore) ListAgents(_ context.Context, f store.AgentFilter) ([]domain.Agent, error) {
	var out []domain.Agent
	for _, a := range m.agents {
		if f.Group != "" && a.ResourceGroup != f.Group {
			continue
		}
		if len(f.IDs) > 0 && !contains(f.IDs, a.ID) {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (m *memStore) CreateSession(_ context.Context, s domain.Session, _ []domain.Kernel, limits ...store.PendingLimit) error {
	if m.closeOnCreate {
		return &store.GroupClosedError{Group: s.ResourceGroup, State: domain.GroupDraining}
	}
	for _, l := range limits {
		n := 0
		for _, c := range m.created {
			owner := map[domain.PolicyScope]string{domain.ScopeUser: c.Owner.User, domain.ScopeProject: c.Owner.Project,
				domain.ScopeDomain: c.Owner.Domain}
			if c.Status == domain.SessionPending && owner[l.Scope] == l.Name {
				n++
			}
		}
		if n >= l.Max {
			return &store.LimitError{Limit: l, Pending: n}
		}
	}
	for _, c := range m.created {
		if s.Name != "" && c.Name == s.Name && c.Owner.User == s.Owner.User {
			return fmt.Errorf("session %s: %w", s.ID, store.ErrNameTaken)
		}
	}
	m.created = append(m.created, s)
	return nil
}

type marks int

func (m *marks) Mark() { *m++ }

var alice = domain.Owner{User: "alice", Project: "vision", Domain: "default"}

func newAdmitter(st *memStore, m *marks) (*admit.Admitter, *domain.Registry) {
	reg := domain.DefaultRegistry()
	return admit.New(admit.Deps{Store: st, Slots: reg, Clock: fixedClock{}, Marker: m}, admit.Config{}), reg
}

func request() admit.Request {
	return admit.Request{ID: "s1", Owner: alice, Image: "sleep"}
}

func slots(t *testing.T, reg *domain.Registry, m map[string]string) domain.Vec {
	t.Helper()
	v, err := reg.ParseSlots(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// capacity is an agent's capacity from slot, quantity pairs.
func capacity(t *testing.T, kv ...string) domain.Vec {
	t.Helper()
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return slots(t, domain.DefaultRegistry(), m)
}

func cpu8(t *testing.T) domain.Vec { t.Helper(); return capacity(t, "cpu", "8", "mem", "16g") }

// TestBuildFillsDefaults: what a request leaves out comes from the
// manager's defaults, the type and the group.
func TestBuildFillsDefaults(t *testing.T) {
	t.Parallel()
	st := newStore()
	st.groups["default"] = domain.ResourceGroup{Name: "default", State: domain.GroupActive, DefaultTimeLimit: time.Hour,
		DefaultSlots: slots(t, domain.DefaultRegistry(), map[string]string{"mem": "4g"})}
	tests := []struct {
		name string
		req  func(*admit.Request)
		want func(*domain.Session)
	}{
		{"bare request", func(*admit.Request) {}, func(s *domain.Session) {}},
		// Batch is preemptible unless it says otherwise; interactive is not.
		{"batch", func(r *admit.Request) { r.Type = "batch" }, func(s *domain.Session) {
			s.Type, s.Preemptible = domain.TypeBatch, true
		}},
		{"own time limit", func(r *admit.Request) { r.TimeLimit = "90m" }, func(s *domain.Session) {
			s.TimeLimit = 90 * time.Minute
		}},
		// cpu named, so the group's mem default (4g) fills only mem.
		{"named slot kept", func(r *admit.Request) { r.Resources = map[string]string{"cpu": "2"} }, func(s *domain.Session) {
			s.Requested = slots(t, domain.DefaultRegistry(), map[string]string{"cpu": "2", "mem": "4g"})
		}},
		{"designated, strict by default", func(r *admit.Request) { r.DesignatedAgents = []string{"a1"} }, func(s *domain.Session) {
			s.DesignatedAgents, s.DesignatedStrict = []domain.AgentID{"a1"}, true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := *st
			st.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default", Capacity: cpu8(t)}}
			a, reg := newAdmitter(&st, new(marks))
			req := request()
			tt.req(&req)
			got, _, err := a.Build(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			// The built-in cpu default (1) and the group's mem default (4g).
			want := domain.Session{ID: "s1", Owner: alice, Type: domain.TypeInteractive, Image: "sleep",
				Architecture: "x86_64", ResourceGroup: "default", ClusterMode: domain.SingleNode, ClusterSize: 1,
				Priority: admit.DefaultPriority, Requested: slots(t, reg, map[string]string{"cpu": "1", "mem": "4g"}),
				Status: domain.SessionPending, CreatedAt: now, StatusChangedAt: now, TimeLimit: time.Hour,
				DependsOn: []domain.SessionID{}}
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("session (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildRefuses: every rule's refusal names its field and class; the
// messages are the API's, byte for byte.
func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(*memStore)
		req   func(*admit.Request)
		class admit.Class
		field string
		msg   string // the whole message, or its start ending in "…"
	}{
		{name: "name with a control character", req: func(r *admit.Request) { r.Name = "a\tb" },
			field: "name", msg: "holds a control character"},
		{name: "unknown type", req: func(r *admit.Request) { r.Type = "cron" }, field: "type", msg: "…"},
		{name: "no image", req: func(r *admit.Request) { r.Image = " " }, field: "image", msg: "an image is required"},
		{name: "image with a space", req: func(r *admit.Request) { r.Image = "a b" }, field: "image",
			msg: "must not contain spaces"},
		{name: "bad architecture", req: func(r *admit.Request) { r.Architecture = "X86" }, field: "architecture",
			msg: "must be 1 to 32 of a-z, 0-9 and _ (such as x86_64 or aarch64)"},
		{name: "unknown slot", req: func(r *admit.Request) { r.Resources = map[string]string{"tpu": "1"} },
			field: "resources.tpu", msg: `unknown slot type "tpu" (known: …`},
		{name: "cluster size 0", req: func(r *admit.Request) { r.ClusterSize = ptr(0) }, field: "cluster_size",
			msg: "must be 1 to 64, not 0"},
		{name: "priority above the maximum", req: func(r *admit.Request) { r.Priority = ptr(101) }, field: "priority",
			msg: "must be 0 to 100, not 101"},
		{name: "start not RFC 3339", req: func(r *admit.Request) { r.StartsAt = "tomorrow" }, field: "starts_at",
			msg: "must be an RFC 3339 time such as 2026-03-01T12:00:00Z"},
		{name: "negative time limit", req: func(r *admit.Request) { r.TimeLimit = "-1h" }, field: "time_limit",
			msg: `must be a positive duration such as "2h" or "90m", not "-1h"`},
		{name: "NUL in the command", req: func(r *admit.Request) { r.Command = []string{"sh", "a\x00"} },
			field: "command[1]", msg: "holds a NUL byte"},
		{name: "reserved variable", req: func(r *admit.Request) { r.Env = map[string]string{"LD_PRELOAD": "x"} },
			field: "env.LD_PRELOAD", msg: "LD_PRELOAD is reserved: …"},
		{name: "no such group", req: func(r *admit.Request) { r.ResourceGroup = "gpu" }, field: "resource_group",
			msg: `no such resource group "gpu"`},
		{name: "draining group", setup: func(m *memStore) {
			m.groups["default"] = domain.ResourceGroup{Name: "default", State: domain.GroupDraining}
		}, class: admit.Conflict, field: "resource_group",
			msg: "resource group default is DRAINING and accepts no new sessions"},
		{name: "type the group does not run", setup: func(m *memStore) {
			m.groups["default"] = domain.ResourceGroup{Name: "default", State: domain.GroupActive,
				AllowedTypes: []domain.SessionType{domain.TypeBatch, domain.TypeInference}}
		}, field: "type", msg: "resource group default does not run interactive sessions (it runs batch, inference)"},
		// The inference hook refuses any time limit.
		{name: "hook refuses", req: func(r *admit.Request) { r.Type, r.TimeLimit = "inference", "1h" }, field: "time_limit",
			msg: "inference sessions have no time limit: their deployment ends them"},
		{name: "over the group's maximum time limit", setup: func(m *memStore) {
			m.groups["default"] = domain.ResourceGroup{Name: "default", State: domain.GroupActive, MaxTimeLimit: time.Hour}
		}, req: func(r *admit.Request) { r.TimeLimit = "2h" }, field: "time_limit",
			msg: "must be at most 1h0m0s in resource group default, not 2h0m0s"},
		{name: "image no agent runs", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default", Catalog: []string{"sleep", "exit:*"}}}
		}, req: func(r *admit.Request) { r.Image = "pytorch" }, field: "image",
			msg: `no agent of resource group default can run image "pytorch": its agents run only the images they know (exit:…, sleep)`},
		// The group's minimum is 2 cpu; the request names 1.
		{name: "below the group's minimum", setup: func(m *memStore) {
			m.groups["default"] = domain.ResourceGroup{Name: "default", State: domain.GroupActive,
				MinSlots: slots(t, domain.DefaultRegistry(), map[string]string{"cpu": "2"})}
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cpu": "1"} }, field: "resources.cpu",
			msg: "must be at least 2 in resource group default, not 1"},
		{name: "fraction of a whole device", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default",
				Devices: []domain.Device{{ID: "cuda:0", Slot: "cuda.device"}}}}
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cuda.device": "0.5"} }, field: "resources.cuda.device",
			msg: "must be a whole number: resource group default hands out cuda.device as whole devices, not 0.5 …"},
		// The process runtime's exit:N takes 0 to 255 only.
		{name: "exit code out of range", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default", Capacity: cpu8(t), Catalog: []string{"exit:{0-255}", "sleep"}}}
		}, req: func(r *admit.Request) { r.Image = "exit:256" }, field: "image",
			msg: `no agent of resource group default can run image "exit:256": its agents run only the images they know (exit:{0-255}, sleep)`},
		{name: "negative exit code", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default", Capacity: cpu8(t), Catalog: []string{"exit:{0-255}", "sleep"}}}
		}, req: func(r *admit.Request) { r.Image = "exit:-1" }, field: "image", msg: `no agent of resource group default can run image "exit:-1": …`},
		{name: "exit without a code", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default", Capacity: cpu8(t), Catalog: []string{"exit:{0-255}", "sleep"}}}
		}, req: func(r *admit.Request) { r.Image = "exit:" }, field: "image", msg: `no agent of resource group default can run image "exit:": …`},
		// The larger agent has 2 cpu; the TERMINATED one's 64 count for
		// nothing.
		{name: "more cpu than any agent has", setup: func(m *memStore) {
			m.agents = []domain.Agent{
				{ID: "a1", ResourceGroup: "default", Capacity: capacity(t, "cpu", "1", "mem", "8g")},
				{ID: "a2", ResourceGroup: "default", Capacity: capacity(t, "cpu", "2", "mem", "8g")},
				{ID: "a3", ResourceGroup: "default", Status: domain.AgentTerminated, Capacity: capacity(t, "cpu", "64", "mem", "8g")},
			}
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cpu": "64"} }, field: "resources.cpu",
			msg: "requests 64 per kernel, more than any agent of resource group default has (largest: 2): " +
				"no agent could ever hold one kernel; ask for less"},
		// Two devices are the most: one whole unit each.
		{name: "more devices than any agent has", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default", Capacity: cpu8(t),
				Devices: []domain.Device{{ID: "cuda:0", Slot: "cuda.device"}, {ID: "cuda:1", Index: 1, Slot: "cuda.device"}}}}
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cuda.device": "3"} }, field: "resources.cuda.device",
			msg: "requests 3 per kernel, more than any agent of resource group default has (largest: 2): …"},
		{name: "shares where agents have whole devices only", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default", Capacity: cpu8(t),
				Devices: []domain.Device{{ID: "cuda:0", Slot: "cuda.device"}}}}
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cuda.shares": "0.5"} }, field: "resources.cuda.shares",
			msg: "requests 0.5 per kernel, more than any agent of resource group default has (largest: 0): …"},
		// a1 has the cpu, a2 the mem, neither both.
		{name: "each slot fits, never together", setup: func(m *memStore) {
			m.agents = []domain.Agent{
				{ID: "a1", ResourceGroup: "default", Capacity: capacity(t, "cpu", "8", "mem", "1g")},
				{ID: "a2", ResourceGroup: "default", Capacity: capacity(t, "cpu", "1", "mem", "16g")},
			}
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cpu": "4", "mem": "8g"} }, field: "resources",
			msg: "no agent of resource group default has all of this per kernel, though each slot fits on some agent: …"},
		// Two agents of 4 cpu: 3 kernels of 2 cpu fit none alone, 5 not
		// both together; max_kernels caps what an agent could hold.
		{name: "single-node cluster larger than any agent", setup: func(m *memStore) {
			m.agents = []domain.Agent{
				{ID: "a1", ResourceGroup: "default", Capacity: capacity(t, "cpu", "4", "mem", "8g")},
				{ID: "a2", ResourceGroup: "default", Capacity: capacity(t, "cpu", "4", "mem", "8g")},
			}
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cpu": "2"}; r.ClusterSize = ptr(3) },
			field: "cluster_size", msg: "a single-node session of 3 kernels needs one agent with room for all of them, " +
				"and no agent of resource group default could ever hold more than 2 of these kernels: …"},
		{name: "multi-node cluster larger than its group", setup: func(m *memStore) {
			m.agents = []domain.Agent{
				{ID: "a1", ResourceGroup: "default", Capacity: capacity(t, "cpu", "4", "mem", "8g")},
				{ID: "a2", ResourceGroup: "default", Capacity: capacity(t, "cpu", "4", "mem", "8g"), MaxKernels: 1},
				{ID: "a3", ResourceGroup: "default", Status: domain.AgentTerminated, Capacity: capacity(t, "cpu", "64", "mem", "8g")},
			}
		}, req: func(r *admit.Request) {
			r.Resources = map[string]string{"cpu": "2"}
			r.ClusterSize, r.ClusterMode = ptr(4), "multi-node"
		}, field: "cluster_size", msg: "a multi-node session of 4 kernels is larger than resource group default: its agents " +
			"together could ever hold at most 3 of these kernels; ask for fewer or smaller kernels"},
		// Identical agents are weighed as one shape; each still counts.
		{name: "multi-node cluster larger than identical agents together", setup: func(m *memStore) {
			for _, id := range []domain.AgentID{"a1", "a2", "a3"} {
				m.agents = append(m.agents, domain.Agent{ID: id, ResourceGroup: "default", Capacity: capacity(t, "cpu", "4", "mem", "8g")})
			}
			m.agents = append(m.agents, domain.Agent{ID: "a4", ResourceGroup: "default", Capacity: capacity(t, "cpu", "4", "mem", "8g"),
				MaxKernels: 1})
		}, req: func(r *admit.Request) {
			r.Resources = map[string]string{"cpu": "2"}
			r.ClusterSize, r.ClusterMode = ptr(8), "multi-node"
		}, field: "cluster_size", msg: "a multi-node session of 8 kernels is larger than resource group default: its agents " +
			"together could ever hold at most 7 of these kernels; ask for fewer or smaller kernels"},
		{name: "dependency the resolver refuses", req: func(r *admit.Request) {
			r.DependsOn = []string{"s0", "nope"}
			r.Resolve = func(_ context.Context, ref string) (domain.SessionID, error) {
				if ref == "nope" {
					return "", &admit.Error{Class: admit.BadRequest, Message: `no session "nope"`}
				}
				return domain.SessionID(ref), nil
			}
		}, field: "depends_on[1]", msg: `no session "nope"`},
		{name: "dependency twice", req: func(r *admit.Request) {
			r.DependsOn = []string{"s0", "s0"}
			r.Resolve = func(_ context.Context, ref string) (domain.SessionID, error) { return domain.SessionID(ref), nil }
		}, field: "depends_on[1]", msg: `session "s0" (s0) is listed twice`},
		{name: "designated agent of another group", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "gpu"}}
		}, req: func(r *admit.Request) { r.DesignatedAgents = []string{"a1"} }, field: "designated_agents[0]",
			msg: "agent a1 is in resource group gpu, not default"},
		{name: "command no agent runs", setup: func(m *memStore) {
			m.agents = []domain.Agent{{ID: "a1", ResourceGroup: "default", Capacity: cpu8(t)}}
		}, req: func(r *admit.Request) { r.Command = []string{"true"} }, field: "command",
			msg: "no agent of resource group default runs a session's own command …"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newStore()
			if tt.setup != nil {
				tt.setup(st)
			}
			a, _ := newAdmitter(st, new(marks))
			req := request()
			if tt.req != nil {
				tt.req(&req)
			}
			_, _, err := a.Build(context.Background(), req)
			wantClass := tt.class
			if wantClass == 0 {
				wantClass = admit.BadRequest
			}
			checkRefusal(t, err, wantClass, tt.field, tt.msg)
		})
	}
}

func checkRefusal(t *testing.T, err error, class admit.Class, field, msg string) {
	t.Helper()
	var e *admit.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a refusal", err)
	}
	if e.Class != class || e.Field != field {
		t.Errorf("got %s at %q, want %s at %q (%s)", e.Class, e.Field, class, field, e.Message)
	}
	if prefix, ok := strings.CutSuffix(msg, "…"); ok {
		if !strings.HasPrefix(e.Message, prefix) {
			t.Errorf("message %q, want it to start with %q", e.Message, prefix)
		}
	} else if e.Message != msg {
		t.Errorf("message %q, want %q", e.Message, msg)
	}
}

// TestSubmitPolicies: the owner's policies refuse at Submit, and only a
// session that is stored asks for a scheduling round.
func TestSubmitPolicies(t *testing.T) {
	t.Parallel()
	reg := domain.DefaultRegistry()
	maxCPU := func(scope domain.PolicyScope, name, cpu string) domain.Policy {
		p := domain.Policy{Scope: scope, Name: name, MaxSlots: domain.Unlimited(reg.Len())}
		id, _ := reg.Lookup("cpu")
		p.MaxSlots[id] = slots(t, reg, map[string]string{"cpu": cpu})[id]
		return p
	}
	tests := []struct {
		name  string
		setup func(*memStore)
		req   func(*admit.Request)
		class admit.Class // 0: admitted
		field string
		msg   string
	}{
		{name: "within every policy", setup: func(m *memStore) {
			m.policies["user/alice"] = maxCPU(domain.ScopeUser, "alice", "4")
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cpu": "4"} }},
		// One kernel of 5 cpu against the user's max 4.
		{name: "over the user's max_slots", setup: func(m *memStore) {
			m.policies["user/alice"] = maxCPU(domain.ScopeUser, "alice", "4")
		}, req: func(r *admit.Request) { r.Resources = map[string]string{"cpu": "5"} }, class: admit.BadRequest,
			field: "resources.cpu", msg: "the session asks for 5 cpu in all, more than user alice's policy allows at once " +
				"(max_slots cpu=4): it could never run; ask for less, or have an admin raise the limit"},
		// 3 kernels × 2 cpu = 6 against the project's max 5: each kernel fits, the session does not.
		{name: "multi-node total over the project's max_slots", setup: func(m *memStore) {
			m.policies["project/vision"] = maxCPU(domain.ScopeProject, "vision", "5")
		}, req: func(r *admit.Request) {
			r.Resources, r.ClusterMode, r.ClusterSize = map[string]string{"cpu": "2"}, "multi-node", ptr(3)
		}, class: admit.BadRequest, field: "resources.cpu",
			msg: "the session asks for 6 cpu in all (3 kernels × 2), more than project vision's policy allows at once …"},
		// One PENDING session already, against the domain's cap of 1.
		{name: "pending cap reached", setup: func(m *memStore) {
			m.policies["domain/default"] = domain.Policy{Scope: domain.ScopeDomain, Name: "default",
				MaxSlots: domain.Unlimited(reg.Len()), MaxPendingSessions: 1}
			m.created = []domain.Session{{ID: "s0", Owner: domain.Owner{User: "bob", Domain: "default"},
				Status: domain.SessionPending}}
		}, class: admit.TooMany, msg: "domain default already has 1 PENDING sessions, the most its policy allows " +
			"(max_pending_sessions 1); wait for one to start, or end one"},
		{name: "name taken", setup: func(m *memStore) {
			m.created = []domain.Session{{ID: "s0", Name: "train", Owner: alice, Status: domain.SessionRunning}}
		}, req: func(r *admit.Request) { r.Name = "train" }, class: admit.Conflict, field: "name",
			msg: `you already have a live session named "train"; end it, or choose another name`},
		{name: "group closed after the build", setup: func(m *memStore) { m.closeOnCreate = true },
			class: admit.Conflict, field: "resource_group",
			msg: "resource group default is DRAINING and accepts no new sessions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newStore()
			if tt.setup != nil {
				tt.setup(st)
			}
			var m marks
			a, _ := newAdmitter(st, &m)
			req := request()
			if tt.req != nil {
				tt.req(&req)
			}
			before := len(st.created)
			_, err := a.Admit(context.Background(), req)
			if tt.class == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if len(st.created) != before+1 || m != 1 {
					t.Errorf("stored %d, marked %d times; want 1 and 1", len(st.created)-before, m)
				}
				return
			}
			checkRefusal(t, err, tt.class, tt.field, tt.msg)
			if len(st.created) != before || m != 0 {
				t.Errorf("a refused session: stored %d, marked %d times; want 0 and 0", len(st.created)-before, m)
			}
		})
	}
}

// TestKernels: one kernel per cluster index, the first main, ids
// <session>-k<index>, each with a request of its own.
func TestKernels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		mode  string
		size  int
		roles []string
	}{
		{"single-node, one kernel", "single-node", 1, []string{domain.RoleMain}},
		{"single-node, two kernels", "single-node", 2, []string{domain.RoleMain, domain.RoleSub}},
		{"multi-node gang", "multi-node", 3, []string{domain.RoleMain, domain.RoleSub, domain.RoleSub}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, reg := newAdmitter(newStore(), new(marks))
			req := request()
			req.ClusterMode, req.ClusterSize, req.Resources = tt.mode, ptr(tt.size), map[string]string{"cpu": "2", "mem": "2g"}
			sess, kernels, err := a.Build(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var want []domain.Kernel
			for i, role := range tt.roles {
				want = append(want, domain.Kernel{ID: domain.KernelID(fmt.Sprintf("s1-k%d", i)), SessionID: "s1",
					ClusterRole: role, ClusterIdx: i, Image: "sleep", Architecture: "x86_64",
					Requested: slots(t, reg, req.Resources), Status: domain.KernelPending, StatusChangedAt: now})
			}
			if diff := cmp.Diff(want, kernels); diff != "" {
				t.Errorf("kernels (-want +got):\n%s", diff)
			}
			if want := domain.ClusterMode(tt.mode); sess.ClusterMode != want {
				t.Errorf("cluster mode %s, want %s", sess.ClusterMode, want)
			}
			// Each kernel's request is its own: changing one leaves the
			// session and the others alone.
			kernels[0].Requested[0]++
			if len(kernels) > 1 && kernels[1].Requested[0] == kernels[0].Requested[0] ||
				sess.Requested[0] == kernels[0].Requested[0] {
				t.Error("kernels share their request vector")
			}
		})
	}
}

// TestErrorReadsAsTheAPIs: a refusal's text is the API's error text, which
// a route's status reason quotes.
func TestErrorReadsAsTheAPIs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  admit.Error
		want string
	}{
		{admit.Error{Class: admit.BadRequest, Field: "image", Message: "an image is required"}, "an image is required (field: image)"},
		{admit.Error{Class: admit.TooMany, Message: "user alice already has 2 PENDING sessions"}, "user alice already has 2 PENDING sessions"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestBuildAcceptsWhatMayYetFit: a request larger than every agent is
// refused only when the group has agents that will stay: a group without
// any, or with TERMINATED ones only, may yet get a large enough agent.
func TestBuildAcceptsWhatMayYetFit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		agents []domain.Agent
	}{
		{"no agents yet", nil},
		{"terminated agents only", []domain.Agent{{ID: "a1", ResourceGroup: "default", Status: domain.AgentTerminated,
			Capacity: capacity(t, "cpu", "2", "mem", "8g")}}},
		{"one agent large enough", []domain.Agent{
			{ID: "a1", ResourceGroup: "default", Capacity: capacity(t, "cpu", "2", "mem", "8g")},
			{ID: "a2", ResourceGroup: "default", Capacity: capacity(t, "cpu", "64", "mem", "8g")},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newStore()
			st.agents = tt.agents
			a, _ := newAdmitter(st, new(marks))
			req := request()
			req.Resources = map[string]string{"cpu": "64"}
			if _, _, err := a.Build(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		})
	}
}
