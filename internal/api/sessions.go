package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/hook"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Limits on the parts of a session request, generous for people and tight
// enough that one request cannot weigh on the store.
const (
	maxNameLen     = 128
	maxImageLen    = 512
	maxArchLen     = 32
	maxListItems   = 64 // depends_on, designated_agents
	maxCommandArgs = 256
	maxCommandLen  = 64 << 10
	maxEnvVars     = 256
	maxEnvValueLen = 32 << 10
	// maxEnvTotal bounds a session's whole environment (names, values and
	// the "=" and NUL of each entry, as execve counts them): it is stored
	// with the session and sent to every agent that runs a kernel.
	maxEnvTotal = 64 << 10
)

var (
	archPattern = regexp.MustCompile(`^[a-z0-9_]+$`)
)

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	var req v1.CreateSessionRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	job, err := s.sessionJob(ctx, u, req.Job)
	if err != nil {
		return err
	}
	sess, kernels, err := s.buildSession(ctx, u, req)
	if err != nil {
		return s.rejectJob(ctx, job, err)
	}
	sess.Job = job.ID
	if sess.Job != "" {
		// Evicting one member would break the job's gang, which preemption
		// does not model: members are never victims.
		if req.Preemptible != nil && *req.Preemptible {
			return s.rejectJob(ctx, job, invalid("preemptible", "a job's member cannot be preempted: it would break the job's gang"))
		}
		sess.Preemptible = false
	}
	if e := s.checkJobGroup(ctx, job, sess.ResourceGroup); e != nil {
		return s.rejectJob(ctx, job, e)
	}
	if err := s.submit(ctx, sess, kernels); err != nil {
		// A name already taken is the user's to fix; it does not refuse
		// the job.
		if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Field == "name" {
			return err
		}
		return s.rejectJob(ctx, job, err)
	}
	created, err := s.store.GetSession(ctx, sess.ID)
	if err != nil {
		// Stored; answer with what was stored rather than fail the submit.
		created = store.SessionWithKernels{Session: sess, Kernels: kernels}
	}
	w.Header().Set("Location", "/v1/sessions/"+string(sess.ID))
	writeJSON(w, http.StatusCreated, s.sessionOut(created))
	return nil
}

// submit stores a session buildSession made, under its owner's limits,
// and asks for a scheduling round. Users' submits and deployments' routes
// both come this way.
func (s *Server) submit(ctx context.Context, sess domain.Session, kernels []domain.Kernel) error {
	policies, err := s.ownerPolicies(ctx, sess.Owner)
	if err != nil {
		return err
	}
	if e := s.checkHardLimits(sess, policies); e != nil {
		return e
	}
	caps := pendingCaps(policies)
	// The store counts and creates in one transaction, serialised per cap
	// across every manager of the database, so no two submits can both
	// take the last place.
	if err := s.store.CreateSession(ctx, sess, kernels, caps...); err != nil {
		var full *store.LimitError
		if errors.As(err, &full) {
			e := &apiError{Status: http.StatusTooManyRequests, Code: codeExhausted, Message: fmt.Sprintf(
				"%s %s already has %d PENDING sessions, the most its policy allows (max_pending_sessions %d); "+
					"wait for one to start, or end one", full.Limit.Scope, full.Limit.Name, full.Pending, full.Limit.Max)}
			return e
		}
		var closed *store.GroupClosedError
		if errors.As(err, &closed) {
			// The group changed state after buildSession read it; the
			// store's answer is the one that holds.
			return groupClosed(closed.Group, closed.State)
		}
		if errors.Is(err, store.ErrNameTaken) {
			e := conflict("you already have a live session named %q; end it, or choose another name", sess.Name)
			e.Field = "name"
			return e
		}
		if errors.Is(err, store.ErrNotFound) {
			// What it refers to was checked a moment ago; nothing is ever
			// deleted, so this is a store fault, not the client's.
			return fmt.Errorf("create session: %w", err)
		}
		return err
	}
	s.sessions.Mark()
	return nil
}

// groupClosed is the 409 for a group that accepts no new sessions.
func groupClosed(group string, st domain.GroupState) *apiError {
	e := conflict("resource group %s is %s and accepts no new sessions", group, st)
	e.Field = "resource_group"
	return e
}

// buildSession validates a request completely and turns it into the
// records to store. It reads but never writes.
func (s *Server) buildSession(ctx context.Context, u store.User, req v1.CreateSessionRequest) (domain.Session, []domain.Kernel, error) {
	now := s.clock.Now().UTC().Truncate(time.Microsecond) // the precision both stores keep
	sess := domain.Session{ID: domain.SessionID(newUUID()), Owner: domain.Owner{User: u.Name, Project: u.Project, Domain: u.Domain},
		Status: domain.SessionPending, CreatedAt: now, StatusChangedAt: now}
	fail := func(e *apiError) (domain.Session, []domain.Kernel, error) { return domain.Session{}, nil, e }

	if e := cleanText("name", req.Name, maxNameLen); e != nil {
		return fail(e)
	}
	sess.Name = req.Name
	sess.Type = domain.TypeInteractive
	if req.Type != "" {
		t, err := domain.ParseSessionType(req.Type)
		if err != nil {
			return fail(invalid("type", "%v", err))
		}
		sess.Type = t
	}
	if strings.TrimSpace(req.Image) == "" {
		return fail(invalid("image", "an image is required"))
	}
	if e := cleanText("image", req.Image, maxImageLen); e != nil {
		return fail(e)
	}
	if strings.ContainsAny(req.Image, " \t") {
		return fail(invalid("image", "must not contain spaces"))
	}
	sess.Image = req.Image
	sess.Architecture = s.cfg.DefaultArchitecture
	if req.Architecture != "" {
		if len(req.Architecture) > maxArchLen || !archPattern.MatchString(req.Architecture) {
			return fail(invalid("architecture", "must be 1 to %d of a-z, 0-9 and _ (such as x86_64 or aarch64)", maxArchLen))
		}
		sess.Architecture = req.Architecture
	}
	requested, e := s.parseSlots("resources", req.Resources, false)
	if e != nil {
		return fail(e)
	}
	sess.Requested = requested

	sess.ClusterMode = domain.SingleNode
	if req.ClusterMode != "" {
		m, err := domain.ParseClusterMode(req.ClusterMode)
		if err != nil {
			return fail(invalid("cluster_mode", "%v", err))
		}
		sess.ClusterMode = m
	}
	sess.ClusterSize = 1
	if req.ClusterSize != nil {
		if n := *req.ClusterSize; n < 1 || n > MaxClusterSize {
			return fail(invalid("cluster_size", "must be 1 to %d, not %d", MaxClusterSize, n))
		}
		sess.ClusterSize = *req.ClusterSize
	}
	sess.Priority = DefaultPriority
	if req.Priority != nil {
		if p := *req.Priority; p < MinPriority || p > MaxPriority {
			return fail(invalid("priority", "must be %d to %d, not %d", MinPriority, MaxPriority, p))
		}
		sess.Priority = *req.Priority
	}
	if req.StartsAt != "" {
		at, err := time.Parse(time.RFC3339, req.StartsAt)
		if err != nil {
			return fail(invalid("starts_at", "must be an RFC 3339 time such as 2026-03-01T12:00:00Z"))
		}
		sess.StartsAt = at.UTC().Truncate(time.Microsecond)
	}
	if req.TimeLimit != "" {
		d, err := time.ParseDuration(req.TimeLimit)
		if err != nil || d <= 0 {
			return fail(invalid("time_limit", "must be a positive duration such as \"2h\" or \"90m\", not %q", req.TimeLimit))
		}
		sess.TimeLimit = d
	}
	sess.Preemptible, sess.Requeue = domain.DefaultPreemptible(sess.Type), req.Requeue
	if req.Preemptible != nil {
		sess.Preemptible = *req.Preemptible
	}
	if e := checkCommand(req.Command); e != nil {
		return fail(e)
	}
	sess.Command = req.Command
	if e := checkEnv(req.Env); e != nil {
		return fail(e)
	}
	sess.Env = req.Env

	// Checks that read the store come last: a request that is wrong on
	// its face costs no query.
	group := s.cfg.DefaultGroup
	if req.ResourceGroup != "" {
		group = req.ResourceGroup
	}
	if !validID(group) {
		return fail(invalid("resource_group", "no such resource group %q", group))
	}
	g, err := s.store.GetResourceGroup(ctx, group)
	if errors.Is(err, store.ErrNotFound) {
		return fail(invalid("resource_group", "no such resource group %q", group))
	}
	if err != nil {
		return domain.Session{}, nil, err
	}
	if !g.State.Admits() {
		// Seed 003: a DRAINING group takes no additions; it only finishes
		// what it holds so it can be removed. This read refuses early; the
		// store's CreateSession decides exactly.
		return fail(groupClosed(g.Name, g.State))
	}
	if !g.Allows(sess.Type) {
		return fail(invalid("type", "resource group %s does not run %s sessions (it runs %s)", g.Name, sess.Type,
			strings.Join(strs(g.AllowedTypes), ", ")))
	}
	sess.ResourceGroup = g.Name
	// The type's hook fills in the group's default time limit and holds
	// the request to the group's maximum.
	if err := s.hooks.For(sess.Type).OnSchedule(&sess, g); err != nil {
		var fe *hook.FieldError
		if errors.As(err, &fe) {
			return fail(invalid(fe.Field, "%s", fe.Message))
		}
		return domain.Session{}, nil, err
	}
	// The group's agents, read once for the checks of what they could run.
	groupAgents, err := s.store.ListAgents(ctx, store.AgentFilter{Group: g.Name})
	if err != nil {
		return domain.Session{}, nil, err
	}
	if err := checkImage(groupAgents, g.Name, sess.Image); err != nil {
		return domain.Session{}, nil, err
	}
	// The group fills what the request leaves out, so every kernel carries
	// a cpu and mem request: it is what the runtime turns into limits and
	// what quotas are charged.
	full, below := g.CompleteRequest(s.slots, sess.Requested, func(id domain.SlotID) bool {
		_, named := req.Resources[s.slots.Type(id).Name]
		return named
	})
	if below != nil {
		t := s.slots.Type(below.Slot)
		return fail(invalid("resources."+t.Name, "must be at least %s in resource group %s, not %s",
			domain.FormatQuantity(t.Kind, below.Minimum), g.Name, domain.FormatQuantity(t.Kind, below.Requested)))
	}
	sess.Requested = full
	if e := wholeDevices(s.slots, groupAgents, g.Name, full); e != nil {
		return fail(e)
	}

	deps, e2 := s.checkDependencies(ctx, req.DependsOn)
	if e2 != nil {
		return domain.Session{}, nil, e2
	}
	sess.DependsOn = deps
	agents, e3 := s.checkDesignated(ctx, g.Name, req.DesignatedAgents)
	if e3 != nil {
		return domain.Session{}, nil, e3
	}
	sess.DesignatedAgents = agents
	sess.DesignatedStrict = len(agents) > 0 && (req.DesignatedStrict == nil || *req.DesignatedStrict)
	if e := checkCommandRunnable(groupAgents, g.Name, sess.Command); e != nil {
		return domain.Session{}, nil, e
	}

	kernels := make([]domain.Kernel, sess.ClusterSize)
	for i := range kernels {
		role := domain.RoleSub
		if i == 0 {
			role = domain.RoleMain
		}
		kernels[i] = domain.Kernel{ID: domain.KernelID(fmt.Sprintf("%s-k%d", sess.ID, i)), SessionID: sess.ID,
			ClusterRole: role, ClusterIdx: i, Image: sess.Image, Architecture: sess.Architecture,
			Requested: sess.Requested.Clone(), Status: domain.KernelPending, StatusChangedAt: now}
	}
	return sess, kernels, nil
}

// parseSlots reads a name → quantity map at field. For limits, a slot not
// named is unlimited rather than zero.
func (s *Server) parseSlots(field string, m map[string]string, limits bool) (domain.Vec, *apiError) {
	v := s.slots.NewVec()
	if limits {
		v = domain.Unlimited(s.slots.Len())
	}
	for _, name := range sortedKeys(m) {
		f := field + "." + name
		id, ok := s.slots.Lookup(name)
		if !ok {
			var known []string
			for _, t := range s.slots.Types() {
				known = append(known, t.Name)
			}
			return nil, invalid(f, "unknown slot type %q (known: %s)", name, strings.Join(known, ", "))
		}
		q, err := domain.ParseQuantity(s.slots.Type(id).Kind, m[name])
		if err != nil {
			return nil, invalid(f, "%v", err)
		}
		v[id] = q
	}
	return v, nil
}

func checkCommand(cmd []string) *apiError {
	if len(cmd) > maxCommandArgs {
		return invalid("command", "has more than %d arguments", maxCommandArgs)
	}
	total := 0
	for i, a := range cmd {
		total += len(a)
		if strings.ContainsRune(a, 0) {
			return invalid(fmt.Sprintf("command[%d]", i), "holds a NUL byte")
		}
	}
	if total > maxCommandLen {
		return invalid("command", "is longer than %d bytes", maxCommandLen)
	}
	return nil
}

func checkEnv(env map[string]string) *apiError {
	if len(env) > maxEnvVars {
		return invalid("env", "has more than %d variables", maxEnvVars)
	}
	total := 0
	for _, k := range sortedKeys(env) {
		if err := domain.CheckUserEnvName(k); err != nil {
			return invalid("env."+k, "%v", err)
		}
		if v := env[k]; len(v) > maxEnvValueLen || strings.ContainsRune(v, 0) {
			return invalid("env."+k, "must be at most %d bytes without NUL", maxEnvValueLen)
		}
		total += len(k) + len(env[k]) + 2
	}
	if total > maxEnvTotal {
		return invalid("env", "is %d bytes in all, more than %d", total, maxEnvTotal)
	}
	return nil
}

// checkDependencies accepts sessions the caller can see, each once, named
// as every verb names them (see resolve). A session of another user is
// refused exactly as a missing one is, so the answer does not tell
// whether it exists.
func (s *Server) checkDependencies(ctx context.Context, ids []string) ([]domain.SessionID, error) {
	if len(ids) > maxListItems {
		return nil, invalid("depends_on", "lists more than %d sessions", maxListItems)
	}
	out := make([]domain.SessionID, 0, len(ids))
	for i, ref := range ids {
		f := fmt.Sprintf("depends_on[%d]", i)
		dep, err := s.resolve(ctx, ref)
		var e *apiError
		if errors.As(err, &e) {
			// Not found or ambiguous: the client's to fix, at this field.
			return nil, &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Message: e.Message, Field: f}
		}
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, dep.Session.ID) {
			return nil, invalid(f, "session %q (%s) is listed twice", ref, dep.Session.ID)
		}
		out = append(out, dep.Session.ID)
	}
	return out, nil
}

// checkImage refuses an image that no agent of the group could ever run:
// every agent there runs only the images of its catalog (the process
// runtime), and none has this one. An agent that pulls from registries
// (docker) may run any image, and a group without agents may yet get one
// that can, so neither is refused: only a certain failure is.
func checkImage(agents []domain.Agent, group, image string) error {
	if len(agents) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, a := range agents {
		if a.MayRun(image) {
			return nil
		}
		for _, c := range a.Catalog {
			known[c] = true
		}
	}
	names := make([]string, 0, len(known))
	for c := range known {
		names = append(names, strings.ReplaceAll(c, "*", "…"))
	}
	slices.Sort(names)
	return invalid("image", "no agent of resource group %s can run image %q: its agents run only the images they "+
		"know (%s)", group, image, strings.Join(names, ", "))
}

func (s *Server) checkDesignated(ctx context.Context, group string, ids []string) ([]domain.AgentID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > maxListItems {
		return nil, invalid("designated_agents", "lists more than %d agents", maxListItems)
	}
	want := make([]domain.AgentID, 0, len(ids))
	for i, id := range ids {
		f := fmt.Sprintf("designated_agents[%d]", i)
		if !validID(id) {
			return nil, invalid(f, "no such agent %q", id)
		}
		if slices.Contains(want, domain.AgentID(id)) {
			return nil, invalid(f, "agent %q is listed twice", id)
		}
		want = append(want, domain.AgentID(id))
	}
	found, err := s.store.ListAgents(ctx, store.AgentFilter{IDs: want})
	if err != nil {
		return nil, err
	}
	byID := make(map[domain.AgentID]domain.Agent, len(found))
	for _, a := range found {
		byID[a.ID] = a
	}
	for i, id := range want {
		f := fmt.Sprintf("designated_agents[%d]", i)
		a, ok := byID[id]
		if !ok {
			return nil, invalid(f, "no such agent %q", id)
		}
		if a.ResourceGroup != group {
			return nil, invalid(f, "agent %s is in resource group %s, not %s", id, a.ResourceGroup, group)
		}
	}
	return want, nil
}

// checkCommandRunnable refuses a command when the group has agents and none
// of them runs a session's own command: placed there, the session would be
// refused by its agent at start and cancelled, after the wait in the queue.
// A group with no agents yet accepts it, as it accepts any session to wait
// for agents.
func checkCommandRunnable(agents []domain.Agent, group string, cmd []string) error {
	if len(cmd) == 0 {
		return nil
	}
	if len(agents) == 0 || slices.ContainsFunc(agents, func(a domain.Agent) bool { return a.AllowsCommand }) {
		return nil
	}
	return invalid("command", "no agent of resource group %s runs a session's own command (an agent allows it "+
		"with `sokovan agent run --allow-command`); leave command out to run the image's own", group)
}

// ownerPolicies returns the policies of the owner's user, project and
// domain that exist, in that order.
func (s *Server) ownerPolicies(ctx context.Context, o domain.Owner) ([]domain.Policy, error) {
	var out []domain.Policy
	for _, c := range []struct {
		scope domain.PolicyScope
		name  string
	}{
		{domain.ScopeUser, o.User},
		{domain.ScopeProject, o.Project},
		{domain.ScopeDomain, o.Domain},
	} {
		if c.name == "" {
			continue
		}
		p, err := s.store.GetPolicy(ctx, c.scope, c.name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// pendingCaps returns the policies' max_pending_sessions as limits for the
// store to keep.
func pendingCaps(policies []domain.Policy) []store.PendingLimit {
	var caps []store.PendingLimit
	for _, p := range policies {
		if p.MaxPendingSessions > 0 {
			caps = append(caps, store.PendingLimit{Scope: p.Scope, Name: p.Name, Max: p.MaxPendingSessions})
		}
	}
	return caps
}

// checkHardLimits refuses a session that asks, all kernels together, for
// more of a slot than a policy over its owner allows at once: it could
// never be scheduled, however long it waited.
func (s *Server) checkHardLimits(sess domain.Session, policies []domain.Policy) *apiError {
	total := sess.Requested.Scale(sess.ClusterSize)
	for _, p := range policies {
		for i := range min(len(total), len(p.MaxSlots)) {
			id := domain.SlotID(i)
			limit := p.MaxSlots.At(id)
			if limit == domain.MaxQuantity || total.At(id) <= limit {
				continue
			}
			t := s.slots.Type(id)
			all := ""
			if sess.ClusterSize > 1 {
				all = fmt.Sprintf(" (%d kernels × %s)", sess.ClusterSize, s.slots.Format(id, sess.Requested.At(id)))
			}
			return invalid("resources."+t.Name, "the session asks for %s %s in all%s, more than %s %s's policy allows "+
				"at once (max_slots %s=%s): it could never run; ask for less, or have an admin raise the limit",
				s.slots.Format(id, total.At(id)), t.Name, all, p.Scope, p.Name, t.Name, s.slots.Format(id, limit))
		}
	}
	return nil
}

// visibleSession loads the session the path names (by id, id prefix or
// name; see resolve) if the caller may see it. Another user's session is
// answered exactly as a missing one.
func (s *Server) visibleSession(r *http.Request) (store.SessionWithKernels, error) {
	return s.resolve(r.Context(), r.PathValue("id"))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.sessionOut(sk))
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	q := r.URL.Query()
	f := store.SessionFilter{Limit: defaultListLimit, Group: q.Get("resource_group"), Name: q.Get("name")}
	for _, v := range q["type"] {
		for _, name := range strings.Split(v, ",") {
			t, err := domain.ParseSessionType(strings.TrimSpace(name))
			if err != nil {
				return invalid("type", "%v", err)
			}
			f.Types = append(f.Types, t)
		}
	}
	switch q.Get("order") {
	case "", "oldest":
	case "newest":
		f.Newest = true
	default:
		return invalid("order", "must be oldest or newest, not %q", q.Get("order"))
	}
	if v := q.Get("ended_within"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return invalid("ended_within", "must be a positive duration such as 1h or 90m")
		}
		// The manager's clock, not the client's, decides what is recent.
		f.EndedSince = s.clock.Now().Add(-d)
	}
	for _, v := range q["status"] {
		for _, name := range strings.Split(v, ",") {
			st, err := domain.ParseSessionStatus(strings.ToUpper(strings.TrimSpace(name)))
			if err != nil {
				return invalid("status", "%v", err)
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			return invalid("limit", "must be an integer from 1 to %d", maxListLimit)
		}
		f.Limit = n
	}
	if v := q.Get("after"); v != "" {
		if !validID(v) {
			return invalid("after", "must be a session id, as a page's next gives it")
		}
		f.After = domain.SessionID(v)
	}
	f.User = q.Get("owner")
	if !isAdmin(u) {
		if f.User != "" && f.User != u.Name {
			return forbidden("only an admin may list other users' sessions")
		}
		f.User = u.Name
	}
	sessions, err := s.store.ListSessions(ctx, f)
	if err != nil {
		return err
	}
	ids := make([]domain.SessionID, len(sessions))
	for i, ss := range sessions {
		ids[i] = ss.ID
	}
	byS := map[domain.SessionID][]domain.Kernel{}
	if len(ids) > 0 {
		kernels, err := s.store.ListKernels(ctx, store.KernelFilter{Sessions: ids})
		if err != nil {
			return err
		}
		for _, k := range kernels {
			byS[k.SessionID] = append(byS[k.SessionID], k)
		}
	}
	out := v1.SessionPage{Items: make([]v1.Session, len(sessions))}
	for i, ss := range sessions {
		out.Items[i] = s.sessionOut(store.SessionWithKernels{Session: ss, Kernels: byS[ss.ID]})
	}
	if len(sessions) == f.Limit {
		// A full page may have more behind it; a short one is the last.
		out.Next = string(sessions[len(sessions)-1].ID)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) sessionHistory(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	entries, err := s.store.History(r.Context(), sk.Session.ID)
	if err != nil {
		return err
	}
	out := v1.List[v1.History]{Items: make([]v1.History, len(entries))}
	for i, e := range entries {
		out.Items[i] = historyOut(e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// why answers from a dry run: the scheduler is pure, so running it on a
// fresh snapshot of the group gives the blockers the next round would
// record, including quotas counted against this round's placements.
func (s *Server) why(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	out := v1.Why{Status: sk.Session.Status.String(), Blockers: []v1.Blocker{}}
	if ss := sk.Session; ss.Status.Terminal() {
		out.Ended = &v1.Ended{At: ss.StatusChangedAt.UTC(), Outcome: ss.Outcome.String(), Reason: ss.StatusReason}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	if sk.Session.Status != domain.SessionPending {
		if out.Progress, err = s.progress(r.Context(), sk); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	snap, plan, err := s.dryRun(r.Context(), sk.Session.ResourceGroup)
	if err != nil {
		return err
	}
	owners := make(map[domain.SessionID]string, len(snap.Pending))
	for _, p := range snap.Pending {
		owners[p.Session.ID] = p.Session.Owner.User
	}
	u := caller(r.Context())
	// The plan is shared with other requests: read it, never append to it.
	for pos, d := range slices.Concat(plan.Impossible, plan.Waiting) {
		if d.Session != sk.Session.ID {
			continue
		}
		for _, b := range d.Blockers {
			bo, hidden := s.visibleBlocker(u, owners, b)
			if hidden {
				bo.Message = fmt.Sprintf("queued behind another session, which does not fit yet (head-of-line: block); "+
					"this session is number %d in the queue", pos-len(plan.Impossible)+1)
			}
			out.Blockers = append(out.Blockers, bo)
		}
	}
	// The blockers stand without the estimate; a failed replay only
	// leaves it out.
	if out.EstimatedStart, err = s.estimatedStart(r.Context(), sk.Session.ResourceGroup, sk.Session.ID); err != nil {
		s.log.Warn("estimate start", "session", sk.Session.ID, "err", err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	force := false
	if v := r.URL.Query().Get("force"); v != "" {
		if force, err = strconv.ParseBool(v); err != nil {
			return invalid("force", "must be true or false")
		}
	}
	if st := sk.Session.Status; st.Terminal() {
		return conflict("session %s has already ended (%s)", sk.Session.ID, st)
	}
	reason := "terminated by " + caller(r.Context()).Name
	if force {
		reason += " (forced)"
	}
	after, err := s.sessions.Terminate(r.Context(), sk.Session.ID, reason, force)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, s.sessionOut(after))
	return nil
}

func (s *Server) sessionLogs(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	want := r.URL.Query().Get("kernel")
	var offset int64
	if q := r.URL.Query().Get("offset"); q != "" {
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil || n < 0 {
			return invalid("offset", "must be a byte count from 0, not %q", q)
		}
		offset = n
	}
	var kernel *domain.Kernel
	for i := range sk.Kernels {
		k := &sk.Kernels[i]
		if want == "" && k.ClusterIdx == 0 || want == string(k.ID) || want == strconv.Itoa(k.ClusterIdx) {
			kernel = k
			break
		}
	}
	if kernel == nil {
		return notFound("session %s has no kernel %q", sk.Session.ID, want)
	}
	if st := sk.Session.Status; kernel.Agent == "" && st.Terminal() {
		// Ended without ever running: there is nothing to fetch anywhere,
		// and "not on an agent yet" would suggest waiting.
		return conflict("session %s ended %s before kernel %s reached an agent, so it never ran and has no logs%s",
			sk.Session.ID, st, kernel.ID, reasonSuffix(sk.Session.StatusReason))
	}
	if s.logs == nil {
		return &apiError{Status: http.StatusNotImplemented, Code: codeNotImplemented, Message: "this manager cannot fetch logs"}
	}
	if kernel.Agent == "" {
		return conflict("kernel %s is not on an agent yet (%s); its logs start once it runs", kernel.ID, kernel.Status)
	}
	if kernel.Status < domain.KernelRunning {
		// Placed but not started: its agent has no log to give yet, and a
		// follower should wait rather than see the agent's failure.
		return conflict("kernel %s has not started yet (%s): it has no output", kernel.ID, kernel.Status)
	}
	s.touch(r.Context(), sk.Session)
	rc, err := s.logs(r.Context(), kernel.Agent, kernel.ID, offset)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound("agent %s has no logs of kernel %s", kernel.Agent, kernel.ID)
		}
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
		s.log.WarnContext(r.Context(), "logs", "agent", kernel.Agent, "kernel", kernel.ID, "err", err)
		return &apiError{Status: http.StatusBadGateway, Code: codeBadGateway,
			Message: fmt.Sprintf("cannot fetch logs from agent %s", kernel.Agent)}
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	rc2 := http.NewResponseController(w)
	_ = rc2.SetWriteDeadline(time.Time{}) // a followed log may run as long as the kernel
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 32<<10)
	for {
		n, err := rc.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			_ = rc2.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				s.log.WarnContext(r.Context(), "logs stream", "kernel", kernel.ID, "err", err)
			}
			return nil
		}
	}
}

// reasonSuffix is ": reason" when there is one.
func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
