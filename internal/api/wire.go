package api

import (
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// The JSON shapes of API.md. Names are snake_case; quantities are strings
// so they stay exact; times are RFC 3339 in UTC. Fields beyond API.md's
// minimum are additions, never changes.

type listJSON[T any] struct {
	Items []T `json:"items"`
}

type statusJSON struct {
	Status string `json:"status"`
}

type createSessionRequest struct {
	Name  string `json:"name"`
	Type  string `json:"type" enum:"interactive,batch,inference"`
	Image string `json:"image"`
	// Architecture is an addition: the kernels' CPU architecture.
	Architecture string `json:"architecture"`
	// Resources are per kernel.
	Resources        map[string]string `json:"resources"`
	ClusterMode      string            `json:"cluster_mode" enum:"single-node,multi-node"`
	ClusterSize      *int              `json:"cluster_size"`
	Priority         *int              `json:"priority"`
	ResourceGroup    string            `json:"resource_group"`
	DependsOn        []string          `json:"depends_on"`
	StartsAt         string            `json:"starts_at"`
	DesignatedAgents []string          `json:"designated_agents"`
	// DesignatedStrict (addition, default true): only the designated
	// agents; false prefers them but may use others.
	DesignatedStrict *bool             `json:"designated_strict"`
	Command          []string          `json:"command"`
	Env              map[string]string `json:"env"`
}

type kernelJSON struct {
	ID              string    `json:"id"`
	Agent           string    `json:"agent"`
	Status          string    `json:"status"`
	StatusReason    string    `json:"status_reason"`
	StatusChangedAt time.Time `json:"status_changed_at"`
	ClusterRole     string    `json:"cluster_role"`
	ClusterIdx      int       `json:"cluster_idx"`
	ExitCode        *int      `json:"exit_code"`
	ContainerID     string    `json:"container_id,omitempty"`
	Image           string    `json:"image"`
}

type sessionJSON struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Owner           string            `json:"owner"`
	Project         string            `json:"project"`
	Domain          string            `json:"domain"`
	Type            string            `json:"type"`
	Image           string            `json:"image"`
	Architecture    string            `json:"architecture"`
	Status          string            `json:"status"`
	StatusReason    string            `json:"status_reason"`
	StatusChangedAt time.Time         `json:"status_changed_at"`
	CreatedAt       time.Time         `json:"created_at"`
	StartsAt        *time.Time        `json:"starts_at,omitempty"`
	ResourceGroup   string            `json:"resource_group"`
	Priority        int               `json:"priority"`
	RequestedSlots  map[string]string `json:"requested_slots"`
	ClusterMode     string            `json:"cluster_mode"`
	ClusterSize     int               `json:"cluster_size"`
	DependsOn       []string          `json:"depends_on"`
	// DesignatedAgents and DesignatedStrict restrict or steer placement.
	DesignatedAgents []string `json:"designated_agents"`
	DesignatedStrict bool     `json:"designated_strict"`
	// Outcome is set once the session ended: success, failure, cancelled.
	Outcome string            `json:"outcome,omitempty"`
	Command []string          `json:"command"`
	Env     map[string]string `json:"env"`
	Kernels []kernelJSON      `json:"kernels"`
}

func (s *Server) sessionOut(sk store.SessionWithKernels) sessionJSON {
	ss := sk.Session
	out := sessionJSON{
		ID: string(ss.ID), Name: ss.Name, Owner: ss.Owner.User, Project: ss.Owner.Project, Domain: ss.Owner.Domain,
		Type: string(ss.Type), Image: ss.Image, Architecture: ss.Architecture, Status: ss.Status.String(),
		StatusReason: ss.StatusReason, StatusChangedAt: ss.StatusChangedAt.UTC(), CreatedAt: ss.CreatedAt.UTC(),
		ResourceGroup: ss.ResourceGroup, Priority: ss.Priority, RequestedSlots: s.slots.FormatSlots(ss.Requested),
		ClusterMode: string(ss.ClusterMode), ClusterSize: ss.ClusterSize, DependsOn: strs(ss.DependsOn),
		DesignatedAgents: strs(ss.DesignatedAgents), DesignatedStrict: ss.DesignatedStrict,
		Outcome: ss.Outcome.String(), Command: nonNil(ss.Command), Env: ss.Env, Kernels: []kernelJSON{},
	}
	if out.Env == nil {
		out.Env = map[string]string{}
	}
	if !ss.StartsAt.IsZero() {
		t := ss.StartsAt.UTC()
		out.StartsAt = &t
	}
	for _, k := range sk.Kernels {
		out.Kernels = append(out.Kernels, kernelJSON{
			ID: string(k.ID), Agent: string(k.Agent), Status: k.Status.String(), StatusReason: k.StatusReason,
			StatusChangedAt: k.StatusChangedAt.UTC(), ClusterRole: k.ClusterRole, ClusterIdx: k.ClusterIdx,
			ExitCode: k.ExitCode, ContainerID: k.ContainerID, Image: k.Image,
		})
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

type historyJSON struct {
	At      time.Time `json:"at"`
	Handler string    `json:"handler"`
	Result  string    `json:"result" enum:"SUCCESS,NEED_RETRY,EXPIRED,GIVE_UP,SKIPPED"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Message string    `json:"message"`
	Attempt int       `json:"attempt"`
}

func historyOut(h domain.HistoryEntry) historyJSON {
	name := func(s domain.SessionStatus) string {
		if s == 0 {
			return ""
		}
		return s.String()
	}
	return historyJSON{At: h.At.UTC(), Handler: string(h.Handler), Result: string(h.Result), From: name(h.From),
		To: name(h.To), Message: h.Message, Attempt: h.Attempt}
}

type whyJSON struct {
	Status   string        `json:"status"`
	Blockers []blockerJSON `json:"blockers"`
	// Progress explains a session that is placed but not yet running, or
	// terminating; absent for PENDING, RUNNING and ended sessions.
	Progress *progressJSON `json:"progress,omitempty"`
}

// progressJSON says what a placed session waits for: one line per kernel
// that holds it back, when the status's bound will move it on, and the
// last failed attempt in this status.
type progressJSON struct {
	Since time.Time `json:"since"`
	// Bound and Deadline are absent when the status is unbounded.
	Bound       string     `json:"bound,omitempty"`
	Deadline    *time.Time `json:"deadline,omitempty"`
	WaitingFor  []string   `json:"waiting_for"`
	LastFailure string     `json:"last_failure,omitempty"`
}

// blockerJSON is framework.Blocker for people and tools: requested,
// available and capacity are quantities of the slot (counts of sessions
// for concurrency, of kernels for the "kernels" slot), empty when the kind
// has none.
type blockerJSON struct {
	Kind       string `json:"kind" enum:"quota,capacity,no_agents,architecture,dependency,start_time,queue_position,resource_group_state,gang,concurrency,session_type"`
	Scope      string `json:"scope"`
	Slot       string `json:"slot"`
	Requested  string `json:"requested"`
	Available  string `json:"available"`
	Capacity   string `json:"capacity,omitempty"`
	Impossible bool   `json:"impossible,omitempty"`
	// ExceedsCapacity: the request is larger than any eligible agent in
	// total, so waiting alone will not help.
	ExceedsCapacity bool   `json:"exceeds_capacity,omitempty"`
	Detail          string `json:"detail,omitempty"`
	Message         string `json:"message"`
}

func (s *Server) blockerOut(b framework.Blocker) blockerJSON {
	out := blockerJSON{Kind: string(b.Kind), Scope: b.Scope, Slot: b.Slot, Impossible: b.Impossible,
		ExceedsCapacity: b.ExceedsCapacity(), Detail: b.Detail, Message: b.Message(s.slots)}
	q := func(v domain.Quantity) string {
		if id, ok := s.slots.Lookup(b.Slot); ok {
			return s.slots.Format(id, v)
		}
		return fmt.Sprint(int64(v))
	}
	switch {
	case b.Kind == framework.BlockConcurrency || b.Slot != "":
		out.Requested, out.Available = q(b.Requested), q(b.Available)
		if b.Capacity != 0 {
			out.Capacity = q(b.Capacity)
		}
	}
	return out
}

type agentJSON struct {
	ID             string            `json:"id"`
	ResourceGroup  string            `json:"resource_group"`
	Status         string            `json:"status"`
	Schedulable    bool              `json:"schedulable"`
	Architecture   string            `json:"architecture"`
	AvailableSlots map[string]string `json:"available_slots"`
	OccupiedSlots  map[string]string `json:"occupied_slots"`
	FreeSlots      map[string]string `json:"free_slots"`
	KernelCount    int               `json:"kernel_count"`
	MaxKernels     int               `json:"max_kernels"`
	LastHeartbeat  *time.Time        `json:"last_heartbeat"`
	Address        string            `json:"address"`
	Runtime        string            `json:"runtime"`
	Labels         map[string]string `json:"labels"`
}

func (s *Server) agentOut(a domain.Agent) agentJSON {
	free := s.slots.NewVec()
	free.Add(a.Capacity)
	free.Sub(a.Occupied)
	for i, q := range free {
		free[i] = max(q, 0)
	}
	out := agentJSON{ID: string(a.ID), ResourceGroup: a.ResourceGroup, Status: a.Status.String(),
		Schedulable: a.Schedulable, Architecture: a.Architecture, AvailableSlots: s.slots.FormatSlots(a.Capacity),
		OccupiedSlots: s.slots.FormatSlots(a.Occupied), FreeSlots: s.slots.FormatSlots(free),
		KernelCount: a.KernelCount, MaxKernels: a.MaxKernels, Address: a.Address, Runtime: a.Runtime, Labels: a.Labels}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if !a.LastHeartbeat.IsZero() {
		t := a.LastHeartbeat.UTC()
		out.LastHeartbeat = &t
	}
	return out
}

type timeoutsJSON struct {
	Pending     string `json:"pending"`
	Scheduled   string `json:"scheduled"`
	Preparing   string `json:"preparing"`
	Prepared    string `json:"prepared"`
	Creating    string `json:"creating"`
	Terminating string `json:"terminating"`
}

type groupJSON struct {
	Name         string       `json:"name"`
	State        string       `json:"state"`
	Sequencer    string       `json:"sequencer"`
	Selector     string       `json:"selector"`
	HeadOfLine   string       `json:"head_of_line"`
	MaxRetries   int          `json:"max_retries"`
	AllowedTypes []string     `json:"allowed_types"`
	Timeouts     timeoutsJSON `json:"timeouts"`
	// DefaultSlots and MinSlots are in force: the group's own values laid
	// over the built-in defaults and floors.
	DefaultSlots map[string]string `json:"default_slots"`
	MinSlots     map[string]string `json:"min_slots"`
}

// groupRequest is a PUT body; nil fields keep the current value.
type groupRequest struct {
	State        *string          `json:"state"`
	Sequencer    *string          `json:"sequencer"`
	Selector     *string          `json:"selector"`
	HeadOfLine   *string          `json:"head_of_line"`
	MaxRetries   *int             `json:"max_retries"`
	AllowedTypes *[]string        `json:"allowed_types"`
	Timeouts     *timeoutsRequest `json:"timeouts"`
	// DefaultSlots and MinSlots replace the group's own values whole; {}
	// goes back to the built-in ones.
	DefaultSlots *map[string]string `json:"default_slots"`
	MinSlots     *map[string]string `json:"min_slots"`
}

type timeoutsRequest struct {
	Pending     *string `json:"pending"`
	Scheduled   *string `json:"scheduled"`
	Preparing   *string `json:"preparing"`
	Prepared    *string `json:"prepared"`
	Creating    *string `json:"creating"`
	Terminating *string `json:"terminating"`
}

// formatDuration writes whole seconds as "90s", as API.md shows them, and
// anything finer as Go writes it; both parse back with time.ParseDuration.
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

func groupOut(reg *domain.Registry, g domain.ResourceGroup) groupJSON {
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
	return groupJSON{Name: g.Name, State: g.State.String(), Sequencer: seq, Selector: sel, HeadOfLine: string(hol),
		MaxRetries: g.MaxRetries, AllowedTypes: strs(g.AllowedTypes),
		Timeouts: timeoutsJSON{Pending: formatDuration(t.Pending), Scheduled: formatDuration(t.Scheduled),
			Preparing: formatDuration(t.Preparing), Prepared: formatDuration(t.Prepared),
			Creating: formatDuration(t.Creating), Terminating: formatDuration(t.Terminating)},
		DefaultSlots: reg.FormatSlots(g.EffectiveDefaultSlots(reg)), MinSlots: reg.FormatSlots(g.EffectiveMinSlots(reg))}
}

type createUserRequest struct {
	Name    string `json:"name"`
	Role    string `json:"role" enum:"admin,user"`
	Project string `json:"project"`
	Domain  string `json:"domain"`
}

type userJSON struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Project   string    `json:"project"`
	Domain    string    `json:"domain"`
	CreatedAt time.Time `json:"created_at"`
}

// newUserJSON is the one answer that carries a token.
type newUserJSON struct {
	userJSON
	Token string `json:"token"`
}

func userOut(u store.User) userJSON {
	return userJSON{ID: u.ID, Name: u.Name, Role: string(u.Role), Project: u.Project, Domain: u.Domain,
		CreatedAt: u.CreatedAt.UTC()}
}

type policyRequest struct {
	MaxSlots              map[string]string `json:"max_slots"`
	MaxConcurrentSessions int               `json:"max_concurrent_sessions"`
	MaxPendingSessions    int               `json:"max_pending_sessions"`
}

type policyJSON struct {
	Scope                 string            `json:"scope"`
	Name                  string            `json:"name"`
	MaxSlots              map[string]string `json:"max_slots"`
	MaxConcurrentSessions int               `json:"max_concurrent_sessions"`
	MaxPendingSessions    int               `json:"max_pending_sessions"`
}

func (s *Server) policyOut(p domain.Policy) policyJSON {
	limits := map[string]string{}
	for i, q := range p.MaxSlots {
		if q != domain.MaxQuantity && i < s.slots.Len() {
			limits[s.slots.Type(domain.SlotID(i)).Name] = s.slots.Format(domain.SlotID(i), q)
		}
	}
	return policyJSON{Scope: string(p.Scope), Name: p.Name, MaxSlots: limits,
		MaxConcurrentSessions: p.MaxConcurrentSessions, MaxPendingSessions: p.MaxPendingSessions}
}

// changeJSON is the data of one event-stream event.
type changeJSON struct {
	Seq       int64     `json:"seq"`
	Kind      string    `json:"kind" enum:"session,kernel"`
	SessionID string    `json:"session_id"`
	KernelID  string    `json:"kernel_id,omitempty"`
	Owner     string    `json:"owner"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Reason    string    `json:"reason"`
	Agent     string    `json:"agent,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	At        time.Time `json:"at"`
}

func changeOut(c store.Change) changeJSON {
	return changeJSON{Seq: c.Pos, Kind: string(c.Kind), SessionID: string(c.Session), KernelID: string(c.Kernel),
		Owner: c.Owner, From: c.From, To: c.To, Reason: c.Reason, Agent: string(c.Agent), ExitCode: c.ExitCode,
		At: c.At.UTC()}
}
