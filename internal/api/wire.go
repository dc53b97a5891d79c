package api

import (
	"fmt"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// The records' conversions into API v1's shapes (package v1). Quantities
// are formatted with the manager's slot registry and times put in UTC
// here, so the wire types stay plain data.

func (s *Server) sessionOut(sk store.SessionWithKernels) v1.Session {
	ss := sk.Session
	out := v1.Session{
		ID: string(ss.ID), Name: ss.Name, Owner: ss.Owner.User, Project: ss.Owner.Project, Domain: ss.Owner.Domain,
		Type: string(ss.Type), Image: ss.Image, Architecture: ss.Architecture, Status: ss.Status.String(),
		StatusReason: ss.StatusReason, StatusChangedAt: ss.StatusChangedAt.UTC(), CreatedAt: ss.CreatedAt.UTC(),
		ResourceGroup: ss.ResourceGroup, Priority: ss.Priority, RequestedSlots: s.slots.FormatSlots(ss.Requested),
		ClusterMode: string(ss.ClusterMode), ClusterSize: ss.ClusterSize, DependsOn: strs(ss.DependsOn),
		DesignatedAgents: strs(ss.DesignatedAgents), DesignatedStrict: ss.DesignatedStrict,
		Outcome: ss.Outcome.String(), Command: nonNil(ss.Command), Env: ss.Env, Kernels: []v1.Kernel{},
		ServicePorts: []v1.ServicePort{}, Job: string(ss.Job), Array: string(ss.Array),
		Preemptible: ss.Preemptible, Requeue: ss.Requeue, PreemptedBy: string(ss.PreemptedBy),
		RequeuedFrom: string(ss.RequeuedFrom),
	}
	if out.Env == nil {
		out.Env = map[string]string{}
	}
	if ss.Array != "" {
		i := ss.ArrayIndex
		out.ArrayIndex = &i
	}
	if ss.TimeLimit > 0 {
		out.TimeLimit = formatDuration(ss.TimeLimit)
	}
	if !ss.StartsAt.IsZero() {
		t := ss.StartsAt.UTC()
		out.StartsAt = &t
	}
	for _, k := range sk.Kernels {
		out.Kernels = append(out.Kernels, v1.Kernel{
			ID: string(k.ID), Agent: string(k.Agent), Status: k.Status.String(), StatusReason: k.StatusReason,
			StatusChangedAt: k.StatusChangedAt.UTC(), ClusterRole: k.ClusterRole, ClusterIdx: k.ClusterIdx,
			ExitCode: k.ExitCode, ContainerID: k.ContainerID, Image: k.Image, Devices: grantsOut(k.Devices),
		})
	}
	for _, p := range servicePorts(sk) {
		out.ServicePorts = append(out.ServicePorts, v1.ServicePort{Name: p.name, Protocol: p.Protocol,
			Kernel: string(p.kernel.ID), Host: p.Host, Port: p.Port, ProxyPath: proxyPath(ss.ID, p.name)})
	}
	return out
}

func strs[S ~string](ids []S) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func historyOut(h domain.HistoryEntry) v1.History {
	name := func(s domain.SessionStatus) string {
		if s == 0 {
			return ""
		}
		return s.String()
	}
	return v1.History{At: h.At.UTC(), Handler: string(h.Cause), Result: string(h.Result), From: name(h.From),
		To: name(h.To), Message: h.Message, Attempt: h.Attempt}
}

func (s *Server) blockerOut(b framework.Blocker) v1.Blocker {
	out := v1.Blocker{Kind: string(b.Kind), Scope: b.Scope, Slot: b.Slot, Impossible: b.Impossible,
		ExceedsCapacity: b.ExceedsCapacity(), Detail: b.Detail, Message: b.Message(s.slots)}
	q := func(v domain.Quantity) string {
		if id, ok := s.slots.Lookup(b.Slot); ok {
			return s.slots.Format(id, v)
		}
		return fmt.Sprint(int64(v))
	}
	switch {
	case b.Kind == framework.BlockConcurrency || b.Kind == framework.BlockArray || b.Slot != "":
		out.Requested, out.Available = q(b.Requested), q(b.Available)
		if b.Capacity != 0 {
			out.Capacity = q(b.Capacity)
		}
		if b.Held != 0 {
			out.Held = q(b.Held)
		}
	}
	return out
}

func (s *Server) agentOut(a domain.Agent) v1.Agent {
	free := s.slots.NewVec()
	free.Add(a.Capacity)
	free.Sub(a.Occupied)
	for i, q := range free {
		free[i] = max(q, 0)
	}
	out := v1.Agent{ID: string(a.ID), ResourceGroup: a.ResourceGroup, Status: a.Status.String(),
		Schedulable: a.Schedulable, Architecture: a.Architecture, AvailableSlots: s.slots.FormatSlots(a.Capacity),
		OccupiedSlots: s.slots.FormatSlots(a.Occupied), FreeSlots: s.slots.FormatSlots(free),
		KernelCount: a.KernelCount, MaxKernels: a.MaxKernels, Address: a.Address, Runtime: a.Runtime, Labels: a.Labels,
		AllowsCommand: a.AllowsCommand}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if !a.LastHeartbeat.IsZero() {
		t := a.LastHeartbeat.UTC()
		out.LastHeartbeat = &t
	}
	return out
}

// formatDuration writes whole seconds as "90s", as API.md shows them, and
// anything finer as Go writes it; both parse back with time.ParseDuration.
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

func groupOut(reg *domain.Registry, g domain.ResourceGroup) v1.Group {
	seq, sel, hol := g.Sequencer, g.Selector, g.HeadOfLine
	if seq == "" {
		seq = scheduler.DefaultSequencer
	}
	if sel == "" {
		sel = scheduler.DefaultSelector
	}
	if hol == "" {
		hol = domain.HOLSkip
	}
	t := g.Timeouts
	return v1.Group{Name: g.Name, State: g.State.String(), Sequencer: seq, Selector: sel, HeadOfLine: string(hol),
		ReservationDepth: g.ReservationDepth, MaxRetries: g.MaxRetries, AllowedTypes: strs(g.AllowedTypes),
		Timeouts: v1.Timeouts{Pending: formatDuration(t.Pending), Scheduled: formatDuration(t.Scheduled),
			Preparing: formatDuration(t.Preparing), Prepared: formatDuration(t.Prepared),
			Creating: formatDuration(t.Creating), Terminating: formatDuration(t.Terminating)},
		DefaultSlots: reg.FormatSlots(g.EffectiveDefaultSlots(reg)), MinSlots: reg.FormatSlots(g.EffectiveMinSlots(reg)),
		DefaultTimeLimit: formatDuration(g.DefaultTimeLimit), MaxTimeLimit: formatDuration(g.MaxTimeLimit),
		IdleTimeout: formatDuration(g.IdleTimeout), Preemption: wirePreemption(g.Preemption),
		FairShare: wireFairShare(g.FairShare)}
}

func userOut(u store.User) v1.User {
	return v1.User{ID: u.ID, Name: u.Name, Role: string(u.Role), Project: u.Project, Domain: u.Domain,
		CreatedAt: u.CreatedAt.UTC()}
}

func (s *Server) policyOut(p domain.Policy) v1.Policy {
	limits := map[string]string{}
	for i, q := range p.MaxSlots {
		if q != domain.MaxQuantity && i < s.slots.Len() {
			limits[s.slots.Type(domain.SlotID(i)).Name] = s.slots.Format(domain.SlotID(i), q)
		}
	}
	return v1.Policy{Scope: string(p.Scope), Name: p.Name, MaxSlots: limits,
		MaxConcurrentSessions: p.MaxConcurrentSessions, MaxPendingSessions: p.MaxPendingSessions}
}

func changeOut(c store.Change) v1.Change {
	return v1.Change{Seq: c.Pos, Kind: string(c.Kind), SessionID: string(c.Session), KernelID: string(c.Kernel),
		Owner: c.Owner, From: c.From, To: c.To, Reason: c.Reason, Agent: string(c.Agent), ExitCode: c.ExitCode,
		At: c.At.UTC()}
}
