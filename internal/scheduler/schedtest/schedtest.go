package schedtest

import (
	"fmt"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// T0 is the time every snapshot built here is taken at.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Registry returns the default slot registry.
func Registry() *domain.Registry { return domain.DefaultRegistry() }

// Slots parses "cpu=2,mem=4g" into a vector; it panics on bad input
// because test tables are constants.
func Slots(spec string) domain.Vec {
	reg := Registry()
	v := reg.NewVec()
	if spec == "" {
		return v
	}
	for _, kv := range strings.Split(spec, ",") {
		name, q, ok := strings.Cut(kv, "=")
		if !ok {
			panic(fmt.Sprintf("bad slot spec %q", spec))
		}
		id, qty, err := reg.Parse(strings.TrimSpace(name), strings.TrimSpace(q))
		if err != nil {
			panic(err)
		}
		v[id] = qty
	}
	return v
}

// AgentB builds an agent.
type AgentB struct{ a domain.Agent }

// MakeAgent returns an ALIVE, schedulable x86_64 agent of group "default"
// with the given capacity and nothing occupied.
func MakeAgent(id, capacity string) *AgentB {
	return &AgentB{a: domain.Agent{
		ID: domain.AgentID(id), ResourceGroup: "default", Architecture: "x86_64",
		Status: domain.AgentAlive, Schedulable: true, Capacity: Slots(capacity), Occupied: Slots(""),
	}}
}

// Occupied sets what kernels already hold on the agent.
func (b *AgentB) Occupied(spec string) *AgentB { b.a.Occupied = Slots(spec); return b }

// Arch sets the architecture.
func (b *AgentB) Arch(a string) *AgentB { b.a.Architecture = a; return b }

// Cordoned marks the agent unschedulable.
func (b *AgentB) Cordoned() *AgentB { b.a.Schedulable = false; return b }

// Lost marks the agent LOST.
func (b *AgentB) Lost() *AgentB { b.a.Status = domain.AgentLost; return b }

// MaxKernels caps kernels on the agent, with n already there.
func (b *AgentB) MaxKernels(limit, n int) *AgentB {
	b.a.MaxKernels, b.a.KernelCount = limit, n
	return b
}

// Devices gives the agent fake devices as domain.ParseFakeDevices reads
// them ("cuda:4"), and the device slots' capacity they add up to.
func (b *AgentB) Devices(spec string) *AgentB {
	devs, err := domain.ParseFakeDevices(spec)
	if err != nil {
		panic(err)
	}
	b.a.Devices = devs
	reg := Registry()
	capacity := domain.DeviceCapacity(reg, devs)
	for i, q := range capacity {
		if q != 0 {
			b.a.Capacity[i] = q
		}
	}
	return b
}

// Obj returns the agent.
func (b *AgentB) Obj() domain.Agent { return b.a }

// SessionB builds a pending session.
type SessionB struct {
	p     framework.PendingSession
	slots domain.Vec
}

// MakeSession returns a single-kernel interactive x86_64 session of user u1
// (project p1, domain d1) asking for perKernel, created at T0.
func MakeSession(id, perKernel string) *SessionB {
	b := &SessionB{slots: Slots(perKernel)}
	b.p.Session = domain.Session{
		ID: domain.SessionID(id), Name: id, Owner: domain.Owner{User: "u1", Project: "p1", Domain: "d1"},
		Type: domain.TypeInteractive, Architecture: "x86_64", ResourceGroup: "default",
		ClusterMode: domain.SingleNode, ClusterSize: 1, Requested: b.slots, Status: domain.SessionPending,
		CreatedAt: T0,
	}
	return b
}

// User sets the owning user.
func (b *SessionB) User(u string) *SessionB { b.p.Session.Owner.User = u; return b }

// Project sets the owning project.
func (b *SessionB) Project(p string) *SessionB { b.p.Session.Owner.Project = p; return b }

// Domain sets the owning domain.
func (b *SessionB) Domain(d string) *SessionB { b.p.Session.Owner.Domain = d; return b }

// Priority sets the priority.
func (b *SessionB) Priority(p int) *SessionB { b.p.Session.Priority = p; return b }

// Created sets the creation time to T0 plus sec seconds.
func (b *SessionB) Created(sec int) *SessionB {
	b.p.Session.CreatedAt = T0.Add(time.Duration(sec) * time.Second)
	return b
}

// Type sets the session type.
func (b *SessionB) Type(t domain.SessionType) *SessionB { b.p.Session.Type = t; return b }

// Arch sets the architecture.
func (b *SessionB) Arch(a string) *SessionB { b.p.Session.Architecture = a; return b }

// Multi makes a multi-node session of n kernels.
func (b *SessionB) Multi(n int) *SessionB {
	b.p.Session.ClusterMode, b.p.Session.ClusterSize = domain.MultiNode, n
	return b
}

// Single makes a single-node session of n kernels.
func (b *SessionB) Single(n int) *SessionB {
	b.p.Session.ClusterMode, b.p.Session.ClusterSize = domain.SingleNode, n
	return b
}

// DependsOn sets dependencies.
func (b *SessionB) DependsOn(ids ...string) *SessionB {
	for _, id := range ids {
		b.p.Session.DependsOn = append(b.p.Session.DependsOn, domain.SessionID(id))
	}
	return b
}

// StartsAt sets starts_at to T0 plus sec seconds.
func (b *SessionB) StartsAt(sec int) *SessionB {
	b.p.Session.StartsAt = T0.Add(time.Duration(sec) * time.Second)
	return b
}

// Designated sets designated agents, strict or preferred.
func (b *SessionB) Designated(strict bool, ids ...string) *SessionB {
	for _, id := range ids {
		b.p.Session.DesignatedAgents = append(b.p.Session.DesignatedAgents, domain.AgentID(id))
	}
	b.p.Session.DesignatedStrict = strict
	return b
}

// Avoid sets agents the session failed on before.
func (b *SessionB) Avoid(ids ...string) *SessionB {
	for _, id := range ids {
		b.p.Session.AvoidAgents = append(b.p.Session.AvoidAgents, domain.AgentID(id))
	}
	return b
}

// Job makes the session a member of job id; the snapshot's Jobs say the
// gang's size.
func (b *SessionB) Job(id string) *SessionB { b.p.Session.Job = domain.JobID(id); return b }

// Array makes the session element index of array id.
func (b *SessionB) Array(id string, index int) *SessionB {
	b.p.Session.Array, b.p.Session.ArrayIndex = domain.ArrayID(id), index
	return b
}

// Obj returns the pending session with ClusterSize kernels of the
// per-kernel request.
func (b *SessionB) Obj() framework.PendingSession {
	p := b.p
	p.Kernels = make([]domain.Kernel, p.Session.ClusterSize)
	for i := range p.Kernels {
		role := domain.RoleSub
		if i == 0 {
			role = domain.RoleMain
		}
		p.Kernels[i] = domain.Kernel{
			ID: domain.KernelID(fmt.Sprintf("%s-k%d", p.Session.ID, i)), SessionID: p.Session.ID,
			ClusterRole: role, ClusterIdx: i, Architecture: p.Session.Architecture,
			Requested: b.slots.Clone(), Status: domain.KernelPending,
		}
	}
	return p
}

// MakeSnapshot returns a snapshot of group "default" (ACTIVE, FIFO,
// concentrated, HOL skip) at T0.
func MakeSnapshot(agents []domain.Agent, sessions []framework.PendingSession) *framework.Snapshot {
	return &framework.Snapshot{
		Now:   T0,
		Slots: Registry(),
		Group: domain.ResourceGroup{
			Name: "default", State: domain.GroupActive, Sequencer: "fifo", Selector: "concentrated",
			HeadOfLine: domain.HOLSkip, MaxRetries: domain.DefaultMaxRetries, Timeouts: domain.DefaultTimeouts(),
		},
		Agents:       agents,
		Pending:      sessions,
		Dependencies: map[domain.SessionID]framework.DependencyState{},
	}
}

// Agents builds a slice from builders.
func Agents(bs ...*AgentB) []domain.Agent {
	out := make([]domain.Agent, len(bs))
	for i, b := range bs {
		out[i] = b.Obj()
	}
	return out
}

// Sessions builds a slice from builders.
func Sessions(bs ...*SessionB) []framework.PendingSession {
	out := make([]framework.PendingSession, len(bs))
	for i, b := range bs {
		out[i] = b.Obj()
	}
	return out
}

// Limit sets the session's time limit in seconds (0: none).
func (b *SessionB) Limit(sec int) *SessionB {
	b.p.Session.TimeLimit = time.Duration(sec) * time.Second
	return b
}

// Hold is a kernel of session holding slots on agent until T0 plus endsSec
// seconds; endsSec 0 means it has no time limit. The caller keeps the
// agent's Occupied in step.
func Hold(agent, session, slots string, endsSec int) framework.Holding {
	h := framework.Holding{Agent: domain.AgentID(agent), Session: domain.SessionID(session), Slots: Slots(slots)}
	if endsSec != 0 {
		h.Ends = T0.Add(time.Duration(endsSec) * time.Second)
	}
	return h
}
