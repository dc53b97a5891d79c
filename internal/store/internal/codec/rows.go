package codec

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Column lists: every engine selects and inserts in exactly this order, and
// the Scan and Args functions below depend on it.
const (
	GroupColumns = `name, state, sequencer, selector, head_of_line, max_retries,
		pending_timeout_ns, scheduled_timeout_ns, preparing_timeout_ns, prepared_timeout_ns,
		creating_timeout_ns, terminating_timeout_ns, allowed_types, default_slots, min_slots,
		default_time_limit_ns, max_time_limit_ns, idle_timeout_ns, reserve, reservation_depth,
		preempt, preempt_min_runtime_ns, preempt_budget, preempt_window_ns, fairshare_half_life_ns, fair_shares`
	AgentColumns = `id, resource_group, address, architecture, runtime, status, schedulable,
		capacity, occupied, max_kernels, kernel_count, last_heartbeat, epoch, images, labels,
		allows_command, catalog, devices, kernel_address`
	// SessionColumns leave out a session's command and environment: they
	// may run to tens of kilobytes each, and only kernel creation and
	// showing the one session need them, while schedulers and listings
	// read every session they select, every cycle. SessionSpecColumns add
	// them.
	SessionColumns = `id, name, owner_user, owner_project, owner_domain, type, image, architecture,
		resource_group, cluster_mode, cluster_size, priority, requested, status, status_reason,
		status_changed_at, created_at, starts_at, designated_agents, designated_strict, avoid_agents,
		outcome, time_limit_ns, job_id, preemptible, requeue, preempted_by, requeued_from, array_id, array_index`
	SessionSpecColumns = SessionColumns + `, command, env`
	KernelColumns      = `id, session_id, cluster_role, cluster_idx, image, architecture, requested,
		agent_id, status, status_reason, status_changed_at, container_id, exit_code, service_ports, devices`
	PolicyColumns  = `scope, name, max_slots, max_concurrent_sessions, max_pending_sessions`
	UserColumns    = `id, name, role, project, domain, created_at`
	HistoryColumns = `session_id, at, handler, result, from_status, to_status, message, attempt`
)

// GroupArgs returns a group's values in GroupColumns order.
func GroupArgs(reg *domain.Registry, g domain.ResourceGroup) ([]any, error) {
	defaults, err := EncodeSlots(reg, g.DefaultSlots)
	if err != nil {
		return nil, invalid("group default slots", err)
	}
	mins, err := EncodeSlots(reg, g.MinSlots)
	if err != nil {
		return nil, invalid("group minimum slots", err)
	}
	t := g.Timeouts
	// Reserve is stored as skip plus the reserve flag: see migration 00070.
	hol, reserve := string(g.HeadOfLine), 0
	if g.HeadOfLine == domain.HOLReserve {
		hol, reserve = string(domain.HOLSkip), 1
	}
	return []any{
		g.Name, StatusName(g.State), g.Sequencer, g.Selector, hol, g.MaxRetries,
		int64(t.Pending), int64(t.Scheduled), int64(t.Preparing), int64(t.Prepared),
		int64(t.Creating), int64(t.Terminating), JSONList(g.AllowedTypes), defaults, mins,
		int64(g.DefaultTimeLimit), int64(g.MaxTimeLimit), int64(g.IdleTimeout), reserve, g.ReservationDepth,
		boolInt(g.Preemption.Enabled), int64(g.Preemption.MinRuntime), g.Preemption.Budget, int64(g.Preemption.Window),
		int64(g.FairShare.HalfLife), jsonShares(g.FairShare.Shares),
	}, nil
}

// ScanGroup reads GroupColumns. Default and minimum slots that are all
// zero read back as nil, as a group that never set them holds them.
func ScanGroup(reg *domain.Registry, sc Scanner) (domain.ResourceGroup, error) {
	var (
		g                        domain.ResourceGroup
		state, hol, allowed      string
		pend, sched, prep, prepd int64
		creat, term              int64
		defaults, mins           string
		deflim, maxlim, idle     int64
		reserve                  int64
		preempt, minRun, window  int64
		halfLife                 int64
		shares                   string
	)
	if err := sc.Scan(&g.Name, &state, &g.Sequencer, &g.Selector, &hol, &g.MaxRetries,
		&pend, &sched, &prep, &prepd, &creat, &term, &allowed, &defaults, &mins,
		&deflim, &maxlim, &idle, &reserve, &g.ReservationDepth,
		&preempt, &minRun, &g.Preemption.Budget, &window, &halfLife, &shares); err != nil {
		return g, err
	}
	g.DefaultTimeLimit, g.MaxTimeLimit, g.IdleTimeout = time.Duration(deflim), time.Duration(maxlim), time.Duration(idle)
	e := rowErr{table: "resource_groups", id: g.Name}
	g.State = parsed(&e, "state", state, domain.ParseGroupState)
	g.HeadOfLine = parsed(&e, "head_of_line", hol, domain.ParseHeadOfLine)
	if reserve == 1 {
		g.HeadOfLine = domain.HOLReserve
	}
	g.Preemption.Enabled, g.Preemption.MinRuntime, g.Preemption.Window = preempt == 1, time.Duration(minRun), time.Duration(window)
	g.Timeouts = domain.Timeouts{
		Pending: time.Duration(pend), Scheduled: time.Duration(sched), Preparing: time.Duration(prep),
		Prepared: time.Duration(prepd), Creating: time.Duration(creat), Terminating: time.Duration(term),
	}
	g.FairShare.HalfLife = time.Duration(halfLife)
	if shares != "{}" && shares != "" {
		e.json("fair_shares", shares, &g.FairShare.Shares)
	}
	e.json("allowed_types", allowed, &g.AllowedTypes)
	if len(g.AllowedTypes) == 0 {
		g.AllowedTypes = nil
	}
	if g.DefaultSlots = e.slots("default_slots", reg, defaults); g.DefaultSlots.IsZero() {
		g.DefaultSlots = nil
	}
	if g.MinSlots = e.slots("min_slots", reg, mins); g.MinSlots.IsZero() {
		g.MinSlots = nil
	}
	return g, e.err
}

// AgentArgs returns a new agent's values in AgentColumns order: ALIVE,
// nothing occupied, epoch 1.
func AgentArgs(reg *domain.Registry, a domain.Agent, now time.Time, ts TimeParam) ([]any, error) {
	capacity, err := EncodeSlots(reg, a.Capacity)
	if err != nil {
		return nil, invalid("agent capacity", err)
	}
	if err := domain.ValidateDevices(reg, a.Devices); err != nil {
		return nil, invalid("agent devices", err)
	}
	return []any{
		string(a.ID), a.ResourceGroup, a.Address, a.Architecture, a.Runtime,
		domain.AgentAlive.String(), a.Schedulable, capacity, "{}", a.MaxKernels, 0,
		ts(now), int64(1), JSONList(a.Images), JSONMap(a.Labels), a.AllowsCommand, JSONList(a.Catalog),
		JSONDevices(a.Devices), a.KernelAddress,
	}, nil
}

// agentRow is one row of AgentColumns as it comes from the database, the
// JSON columns still text: ScanAgent and AgentDecoder decode it their own
// ways, from one list of columns.
type agentRow struct {
	a                  domain.Agent
	id, status         string
	capacity, occupied string
	images, labels     string
	catalog            string
	devices            string
	heartbeat          rawTime
}

func scanAgentRow(sc Scanner) (agentRow, rowErr, error) {
	var r agentRow
	a := &r.a
	if err := sc.Scan(&r.id, &a.ResourceGroup, &a.Address, &a.Architecture, &a.Runtime, &r.status,
		&a.Schedulable, &r.capacity, &r.occupied, &a.MaxKernels, &a.KernelCount, &r.heartbeat, &a.Epoch,
		&r.images, &r.labels, &a.AllowsCommand, &r.catalog, &r.devices, &a.KernelAddress); err != nil {
		return r, rowErr{}, err
	}
	a.ID = domain.AgentID(r.id)
	e := rowErr{table: "agents", id: r.id}
	a.Status = parsed(&e, "status", r.status, domain.ParseAgentStatus)
	a.LastHeartbeat = e.time("last_heartbeat", r.heartbeat)
	return r, e, nil
}

// ScanAgent reads AgentColumns.
func ScanAgent(reg *domain.Registry, sc Scanner) (domain.Agent, error) {
	r, e, err := scanAgentRow(sc)
	if err != nil {
		return r.a, err
	}
	a := r.a
	a.Capacity = e.slots("capacity", reg, r.capacity)
	a.Occupied = e.slots("occupied", reg, r.occupied)
	e.json("images", r.images, &a.Images)
	e.json("labels", r.labels, &a.Labels)
	e.json("catalog", r.catalog, &a.Catalog)
	e.json("devices", r.devices, &a.Devices)
	return emptyAsNil(a), e.err
}

// emptyAsNil leaves an agent's empty lists and maps nil, as they were
// before they were stored.
func emptyAsNil(a domain.Agent) domain.Agent {
	if len(a.Images) == 0 {
		a.Images = nil
	}
	if len(a.Catalog) == 0 {
		a.Catalog = nil
	}
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(a.Devices) == 0 {
		a.Devices = nil
	}
	return a
}

// SessionArgs returns a new session's values in SessionSpecColumns order, as
// PENDING since its creation time.
func SessionArgs(reg *domain.Registry, s domain.Session, ts TimeParam) ([]any, error) {
	requested, err := EncodeSlots(reg, s.Requested)
	if err != nil {
		return nil, invalid("session requested slots", err)
	}
	return []any{
		string(s.ID), s.Name, s.Owner.User, s.Owner.Project, s.Owner.Domain, string(s.Type), s.Image,
		s.Architecture, s.ResourceGroup, string(s.ClusterMode), s.ClusterSize, s.Priority, requested,
		domain.SessionPending.String(), s.StatusReason, ts(s.CreatedAt), ts(s.CreatedAt), ts(s.StartsAt),
		JSONList(s.DesignatedAgents), s.DesignatedStrict, JSONList(s.AvoidAgents),
		"", int64(s.TimeLimit), nullString(string(s.Job)), boolInt(s.Preemptible), boolInt(s.Requeue), "",
		string(s.RequeuedFrom), nullString(string(s.Array)), s.ArrayIndex, JSONList(s.Command), JSONMap(s.Env),
	}, nil
}

// ScanSession reads SessionColumns, leaving Command and Env empty;
// DependsOn is left for the caller, who reads session_dependencies.
func ScanSession(reg *domain.Registry, sc Scanner) (domain.Session, error) {
	return scanSession(reg, sc, false)
}

// ScanSessionSpec reads SessionSpecColumns: the whole session but its
// dependencies.
func ScanSessionSpec(reg *domain.Registry, sc Scanner) (domain.Session, error) {
	return scanSession(reg, sc, true)
}

func scanSession(reg *domain.Registry, sc Scanner, spec bool) (domain.Session, error) {
	var (
		s                                domain.Session
		id, typ, mode, requested, status string
		outcome, designated, avoid       string
		command, env                     string
		changed, created, starts         rawTime
		limit                            int64
		job                              sql.NullString
		preemptible, requeue             int64
		preemptedBy, requeuedFrom        string
		array                            sql.NullString
	)
	dest := []any{&id, &s.Name, &s.Owner.User, &s.Owner.Project, &s.Owner.Domain, &typ, &s.Image,
		&s.Architecture, &s.ResourceGroup, &mode, &s.ClusterSize, &s.Priority, &requested, &status,
		&s.StatusReason, &changed, &created, &starts, &designated, &s.DesignatedStrict, &avoid, &outcome, &limit, &job,
		&preemptible, &requeue, &preemptedBy, &requeuedFrom, &array, &s.ArrayIndex}
	if spec {
		dest = append(dest, &command, &env)
	}
	if err := sc.Scan(dest...); err != nil {
		return s, err
	}
	s.ID = domain.SessionID(id)
	e := rowErr{table: "sessions", id: id}
	s.Type = parsed(&e, "type", typ, domain.ParseSessionType)
	s.ClusterMode = parsed(&e, "cluster_mode", mode, domain.ParseClusterMode)
	s.Requested = e.slots("requested", reg, requested)
	s.Status = e.sessionStatus("status", status)
	if s.Status == 0 {
		e.fail("status", errEmptyStatus)
	}
	s.StatusChangedAt = e.time("status_changed_at", changed)
	s.CreatedAt = e.time("created_at", created)
	s.StartsAt = e.time("starts_at", starts)
	s.DesignatedAgents = e.agentList("designated_agents", designated)
	s.AvoidAgents = e.agentList("avoid_agents", avoid)
	s.Outcome = parsed(&e, "outcome", outcome, domain.ParseOutcome)
	s.TimeLimit = time.Duration(limit)
	s.Job = domain.JobID(job.String)
	s.Preemptible, s.Requeue, s.PreemptedBy = preemptible == 1, requeue == 1, domain.SessionID(preemptedBy)
	s.RequeuedFrom = domain.SessionID(requeuedFrom)
	s.Array = domain.ArrayID(array.String)
	if s.PreemptedBy != "" && s.Outcome == domain.OutcomeFailure {
		// Stored as failure: see migration 00110.
		s.Outcome = domain.OutcomePreempted
	}
	if spec {
		e.json("command", command, &s.Command)
		e.json("env", env, &s.Env)
	}
	if len(s.DesignatedAgents) == 0 {
		s.DesignatedAgents = nil
	}
	if len(s.AvoidAgents) == 0 {
		s.AvoidAgents = nil
	}
	if len(s.Command) == 0 {
		s.Command = nil
	}
	if len(s.Env) == 0 {
		s.Env = nil
	}
	return s, e.err
}

// SpecColumns are what ScanSpec reads.
const SpecColumns = `id, command, env`

// ScanSpec reads SpecColumns.
func ScanSpec(sc Scanner) (domain.SessionID, store.SessionSpec, error) {
	var (
		spec             store.SessionSpec
		id, command, env string
	)
	if err := sc.Scan(&id, &command, &env); err != nil {
		return "", spec, err
	}
	e := rowErr{table: "sessions", id: id}
	e.json("command", command, &spec.Command)
	e.json("env", env, &spec.Env)
	if len(spec.Command) == 0 {
		spec.Command = nil
	}
	if len(spec.Env) == 0 {
		spec.Env = nil
	}
	return domain.SessionID(id), spec, e.err
}

// KernelArgs returns a new kernel's values in KernelColumns order: PENDING,
// on no agent, with no container or exit code yet, since its session's
// creation.
func KernelArgs(reg *domain.Registry, k domain.Kernel, created time.Time, ts TimeParam) ([]any, error) {
	requested, err := EncodeSlots(reg, k.Requested)
	if err != nil {
		return nil, invalid("kernel requested slots", err)
	}
	return []any{
		string(k.ID), string(k.SessionID), k.ClusterRole, k.ClusterIdx, k.Image, k.Architecture,
		requested, nil, domain.KernelPending.String(), k.StatusReason, ts(created), "", nil, "[]", "[]",
	}, nil
}

// ScanKernel reads KernelColumns.
func ScanKernel(reg *domain.Registry, sc Scanner) (domain.Kernel, error) {
	var (
		k                      domain.Kernel
		id, session, requested string
		status                 string
		agent                  sql.NullString
		exit                   sql.NullInt64
		changed                rawTime
		ports, devices         string
	)
	if err := sc.Scan(&id, &session, &k.ClusterRole, &k.ClusterIdx, &k.Image, &k.Architecture,
		&requested, &agent, &status, &k.StatusReason, &changed, &k.ContainerID, &exit, &ports, &devices); err != nil {
		return k, err
	}
	k.ID, k.SessionID, k.Agent = domain.KernelID(id), domain.SessionID(session), domain.AgentID(agent.String)
	e := rowErr{table: "kernels", id: id}
	k.Requested = e.slots("requested", reg, requested)
	k.Status = e.kernelStatus("status", status)
	k.StatusChangedAt = e.time("status_changed_at", changed)
	if exit.Valid {
		code := int(exit.Int64)
		k.ExitCode = &code
	}
	e.json("service_ports", ports, &k.ServicePorts)
	if len(k.ServicePorts) == 0 {
		k.ServicePorts = nil
	}
	e.json("devices", devices, &k.Devices)
	if len(k.Devices) == 0 {
		k.Devices = nil
	}
	return k, e.err
}

// PolicyArgs returns a policy's values in PolicyColumns order.
func PolicyArgs(reg *domain.Registry, p domain.Policy) ([]any, error) {
	limits, err := EncodeLimits(reg, p.MaxSlots)
	if err != nil {
		return nil, invalid("policy max slots", err)
	}
	return []any{string(p.Scope), p.Name, limits, p.MaxConcurrentSessions, p.MaxPendingSessions}, nil
}

// ScanPolicy reads PolicyColumns.
func ScanPolicy(reg *domain.Registry, sc Scanner) (domain.Policy, error) {
	var (
		p            domain.Policy
		scope, slots string
	)
	if err := sc.Scan(&scope, &p.Name, &slots, &p.MaxConcurrentSessions, &p.MaxPendingSessions); err != nil {
		return p, err
	}
	e := rowErr{table: "policies", id: scope + ":" + p.Name}
	p.Scope = parsed(&e, "scope", scope, domain.ParsePolicyScope)
	var err error
	p.MaxSlots, err = DecodeLimits(reg, slots)
	e.fail("max_slots", err)
	return p, e.err
}

// UserArgs returns a user's values in UserColumns order.
func UserArgs(u store.User, ts TimeParam) []any {
	return []any{u.ID, u.Name, string(u.Role), u.Project, u.Domain, ts(u.CreatedAt)}
}

// ScanUser reads UserColumns.
func ScanUser(sc Scanner) (store.User, error) {
	var (
		u       store.User
		role    string
		created rawTime
	)
	if err := sc.Scan(&u.ID, &u.Name, &role, &u.Project, &u.Domain, &created); err != nil {
		return u, err
	}
	u.Role = store.Role(role)
	e := rowErr{table: "users", id: u.ID}
	u.CreatedAt = e.time("created_at", created)
	return u, e.err
}

// ScanTokenUser reads UserColumns and the expiry of the token the user
// was found by.
func ScanTokenUser(sc Scanner) (store.User, error) {
	var (
		u                store.User
		role             string
		created, expires rawTime
	)
	if err := sc.Scan(&u.ID, &u.Name, &role, &u.Project, &u.Domain, &created, &expires); err != nil {
		return u, err
	}
	u.Role = store.Role(role)
	e := rowErr{table: "users", id: u.ID}
	u.CreatedAt = e.time("created_at", created)
	u.TokenExpiresAt = e.time("tokens.expires_at", expires)
	return u, e.err
}

// ScanHistory reads HistoryColumns preceded by the entry's row id.
func ScanHistory(sc Scanner) (int64, domain.HistoryEntry, error) {
	var (
		rowID            int64
		h                domain.HistoryEntry
		session, handler string
		result, from, to string
		at               rawTime
	)
	if err := sc.Scan(&rowID, &session, &at, &handler, &result, &from, &to, &h.Message, &h.Attempt); err != nil {
		return 0, h, err
	}
	h.Subject, h.Cause, h.Result = domain.SessionID(session), domain.HandlerName(handler), domain.Result(result)
	e := rowErr{table: "scheduling_history", id: strconv.FormatInt(rowID, 10)}
	h.At = e.time("at", at)
	h.From = e.sessionStatus("from_status", from)
	h.To = e.sessionStatus("to_status", to)
	return rowID, h, e.err
}

// nullString stores "" as NULL, for optional references such as a
// session's job.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// jsonShares writes a group's fair shares as a JSON object; none is "{}".
func jsonShares(m map[string]float64) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // finite floats by string keys always marshal
	return string(b)
}

// ScanGuarded reads a session that a move's guard locked: its id, the
// status it is moving from and when it was created, which the move's
// history and metrics need without a read of their own.
func ScanGuarded(sc Scanner) (store.Moved, error) {
	var (
		m          store.Moved
		id, status string
		created    rawTime
	)
	if err := sc.Scan(&id, &status, &created); err != nil {
		return m, err
	}
	m.ID = domain.SessionID(id)
	e := rowErr{table: "sessions", id: id}
	m.From = e.sessionStatus("status", status)
	m.CreatedAt = e.time("created_at", created)
	return m, e.err
}
