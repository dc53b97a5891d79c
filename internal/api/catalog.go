package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// namePattern is what user, project, domain and resource group names may
// hold: they appear in scopes ("user:alice") and URLs.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// maxPolicyCount bounds session counts in policies (the store keeps
// 32-bit integers).
const maxPolicyCount = 1_000_000

const nameRule = "must be 1 to 64 of letters, digits, '.', '_', '@' and '-', starting with a letter or digit"

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	filter := store.AgentFilter{Group: r.URL.Query().Get("resource_group")}
	all, err := queryBool(r, "all")
	if err != nil {
		return err
	}
	if !all {
		// Retired agents are history, not capacity: they stay readable
		// by id and with all, but would otherwise pile up in every list.
		filter.Statuses = []domain.AgentStatus{domain.AgentAlive, domain.AgentLost}
	}
	agents, err := s.store.ListAgents(r.Context(), filter)
	if err != nil {
		return err
	}
	drains, err := s.drains(r.Context())
	if err != nil {
		return err
	}
	out := v1.List[v1.Agent]{Items: make([]v1.Agent, len(agents))}
	for i, a := range agents {
		out.Items[i] = withDrain(s.agentView(r, a), a, drains)
	}
	if err := s.addDevices(r, agents, out.Items); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) agentByPath(r *http.Request) (domain.Agent, error) {
	id := r.PathValue("id")
	if !validID(id) {
		return domain.Agent{}, notFound("no agent %q", id)
	}
	a, err := s.store.GetAgent(r.Context(), domain.AgentID(id))
	if errors.Is(err, store.ErrNotFound) {
		return domain.Agent{}, notFound("no agent %q", id)
	}
	return a, err
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) error {
	a, err := s.agentByPath(r)
	if err != nil {
		return err
	}
	return s.writeAgent(w, r, a)
}

// writeAgent answers with one agent as GET /v1/agents/{id} shows it: its
// drain and its devices with their holders.
func (s *Server) writeAgent(w http.ResponseWriter, r *http.Request, a domain.Agent) error {
	drains, err := s.drains(r.Context())
	if err != nil {
		return err
	}
	out := []v1.Agent{withDrain(s.agentView(r, a), a, drains)}
	if err := s.addDevices(r, []domain.Agent{a}, out); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out[0])
	return nil
}

// agentView is an agent as the caller may see it: its RPC address is for
// admins, since anyone who can reach it can try the agent's own API.
func (s *Server) agentView(r *http.Request, a domain.Agent) v1.Agent {
	out := s.agentOut(a)
	if !isAdmin(caller(r.Context())) {
		out.Address = ""
	}
	return out
}

// cordon sets the agent's schedulable flag: the scheduler places nothing
// on an unschedulable agent, and what runs there runs on to its end.
// Uncordoning also ends a drain.
func (s *Server) cordon(schedulable bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		a, err := s.agentByPath(r)
		if err != nil {
			return err
		}
		if err := s.store.SetAgentSchedulable(r.Context(), a.ID, schedulable); err != nil {
			return err
		}
		if schedulable {
			s.sessions.Mark() // pending sessions may fit now
		}
		a, err = s.store.GetAgent(r.Context(), a.ID)
		if err != nil {
			return err
		}
		return s.writeAgent(w, r, a)
	}
}

// retireAgent takes a dead agent out of the books, as Nomad's node purge:
// only a LOST agent qualifies, since an ALIVE one would simply come back,
// and only once the sweep has given up its kernels, since nothing ends the
// kernels of a TERMINATED agent. The store checks and moves in one
// transaction, so a registration racing it is never overwritten.
func (s *Server) retireAgent(w http.ResponseWriter, r *http.Request) error {
	a, err := s.agentByPath(r)
	if err != nil {
		return err
	}
	a, err = s.store.RetireAgent(r.Context(), a.ID)
	var re *store.AgentRetireError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("no agent %q", r.PathValue("id"))
	case errors.As(err, &re) && re.Status == domain.AgentTerminated:
		// Revoked again, in case the first removal failed to.
		if err := s.revokeAgent(r, a.ID); err != nil {
			return err
		}
		return conflict("agent %s is already TERMINATED", re.Agent)
	case errors.As(err, &re) && re.Status != domain.AgentLost:
		return conflict("agent %s is %s: only a LOST agent can be removed (stop the agent first)", re.Agent, re.Status)
	case errors.As(err, &re):
		return conflict("agent %s still holds %d kernels: the manager gives them up once the agent has been LOST "+
			"for heartbeat_timeout + lost_grace (next sweep after that); try again then", re.Agent, re.Kernels)
	case err != nil:
		return err
	}
	if err := s.revokeAgent(r, a.ID); err != nil {
		return err
	}
	return s.writeAgent(w, r, a)
}

// revokeAgent revokes a removed agent's certificates, so that neither it
// nor whoever holds its key can speak for it again; a new agent of that id
// must join afresh.
func (s *Server) revokeAgent(r *http.Request, id domain.AgentID) error {
	n, err := s.store.RevokeAgentCertificates(r.Context(), id, s.clock.Now())
	if n > 0 {
		s.log.Info("agent certificates revoked", "agent", id, "count", n)
	}
	if err == nil && s.identityChanged != nil {
		// Open connections to the agent are closed now: a revocation
		// otherwise reaches only connections made after it.
		s.identityChanged(r.Context())
	}
	return err
}

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) error {
	groups, err := s.store.ListResourceGroups(r.Context())
	if err != nil {
		return err
	}
	return writeList(w, groups, func(g domain.ResourceGroup) v1.Group { return groupOut(s.slots, g) })
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if !validID(name) {
		return notFound("no resource group %q", name)
	}
	g, err := s.store.GetResourceGroup(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("no resource group %q", name)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, groupOut(s.slots, g))
	return nil
}

// putGroup merges the request onto the group as it is (or the defaults
// for a new one), validates the result whole, and stores it.
// maxReservationDepth bounds reservation_depth: each reservation costs a
// round a sweep over the group's running kernels, as SLURM's
// bf_max_job_test bounds its backfill's work.
const maxReservationDepth = 100

func (s *Server) putGroup(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	name := r.PathValue("name")
	if !namePattern.MatchString(name) {
		return invalid("name", "resource group name %s", nameRule)
	}
	var req v1.GroupRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	g, err := s.store.GetResourceGroup(ctx, name)
	created := errors.Is(err, store.ErrNotFound)
	switch {
	case created:
		g = domain.ResourceGroup{Name: name, State: domain.GroupActive, Sequencer: "fifo", Selector: "concentrated",
			HeadOfLine: domain.DefaultHeadOfLine, ReservationDepth: domain.DefaultReservationDepth,
			MaxRetries: domain.DefaultMaxRetries, Timeouts: s.sessions.NewGroupTimeouts()}
	case err != nil:
		return err
	}
	if err := s.applyGroupRequest(&g, req, created); err != nil {
		return err
	}
	if err := s.checkGroup(g); err != nil {
		return err
	}
	if err := s.store.PutResourceGroup(ctx, g); err != nil {
		return err
	}
	s.sessions.Mark()
	stored, err := s.store.GetResourceGroup(ctx, name)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, groupOut(s.slots, stored))
	return nil
}

// applyGroupRequest sets on g the fields req gives, each checked on its
// own; the first bad one is the answer and g is not stored.
func (s *Server) applyGroupRequest(g *domain.ResourceGroup, req v1.GroupRequest, created bool) error {
	if req.State != nil {
		if err := applyGroupState(g, *req.State, created); err != nil {
			return err
		}
	}
	if err := s.applyGroupScheduling(g, req); err != nil {
		return err
	}
	if err := applyGroupTimeouts(g, req.Timeouts); err != nil {
		return err
	}
	if err := s.applyGroupSlots(g, req); err != nil {
		return err
	}
	if err := applyGroupTimeLimits(g, req); err != nil {
		return err
	}
	if e := applyPreemption(req.Preemption, &g.Preemption); e != nil {
		return e
	}
	if e := applyFairShare(req.FairShare, &g.FairShare); e != nil {
		return e
	}
	return nil
}

// applyGroupState moves g to the state named want.
func applyGroupState(g *domain.ResourceGroup, want string, created bool) error {
	st, err := domain.ParseGroupState(strings.ToUpper(want))
	if err != nil {
		return invalid("state", "%v", err)
	}
	if st == domain.GroupRemoved {
		return invalid("state", "REMOVED is reached only by DELETE /v1/resource-groups/%s", g.Name)
	}
	if !created {
		// The wanted state is reached only through seed 003's table, so
		// a DRAINING group cannot be brought back.
		ev, err := domain.GroupEventTo(st)
		if err != nil {
			return invalid("state", "%v", err)
		}
		if st, err = domain.NextGroupState(ev, g.State); err != nil {
			e := conflict("resource group %s is %s: %s to %s is not allowed (%v)", g.Name, g.State, ev, want, err)
			e.Field = "state"
			return e
		}
	}
	g.State = st
	return nil
}

// applyGroupScheduling sets how the group's rounds order and place
// sessions and how often a failed one is retried.
func (s *Server) applyGroupScheduling(g *domain.ResourceGroup, req v1.GroupRequest) error {
	if req.Sequencer != nil {
		if !slices.Contains(s.plugins.SequencerNames(), *req.Sequencer) {
			return invalid("sequencer", "unknown sequencer %q (known: %s)", *req.Sequencer,
				strings.Join(s.plugins.SequencerNames(), ", "))
		}
		g.Sequencer = *req.Sequencer
	}
	if req.Selector != nil {
		if !slices.Contains(s.plugins.SelectorNames(), *req.Selector) {
			return invalid("selector", "unknown selector %q (known: %s)", *req.Selector,
				strings.Join(s.plugins.SelectorNames(), ", "))
		}
		g.Selector = *req.Selector
	}
	if req.HeadOfLine != nil {
		hol, err := domain.ParseHeadOfLine(*req.HeadOfLine)
		if err != nil {
			return invalid("head_of_line", "%v", err)
		}
		g.HeadOfLine = hol
	}
	if req.ReservationDepth != nil {
		if n := *req.ReservationDepth; n < 0 || n > maxReservationDepth {
			return invalid("reservation_depth", "must be 0 to %d, not %d", maxReservationDepth, n)
		}
		g.ReservationDepth = *req.ReservationDepth
	}
	if req.MaxRetries != nil {
		if n := *req.MaxRetries; n < 0 || n > 1000 {
			return invalid("max_retries", "must be 0 to 1000, not %d", n)
		}
		g.MaxRetries = *req.MaxRetries
	}
	if req.AllowedTypes != nil {
		types := []domain.SessionType{}
		for i, t := range *req.AllowedTypes {
			st, err := domain.ParseSessionType(t)
			if err != nil {
				return invalid(fmt.Sprintf("allowed_types[%d]", i), "%v", err)
			}
			if !slices.Contains(types, st) {
				types = append(types, st)
			}
		}
		g.AllowedTypes = types
	}
	return nil
}

// durationField is a duration of a request, where it goes, and the name
// a bad one is refused with.
type durationField struct {
	name string
	v    *string
	dst  *time.Duration
}

// applyGroupTimeouts sets the bounds of the phases t names.
func applyGroupTimeouts(g *domain.ResourceGroup, t *v1.TimeoutsRequest) error {
	if t == nil {
		return nil
	}
	for _, f := range []durationField{
		{"pending", t.Pending, &g.Timeouts.Pending}, {"scheduled", t.Scheduled, &g.Timeouts.Scheduled},
		{"preparing", t.Preparing, &g.Timeouts.Preparing}, {"prepared", t.Prepared, &g.Timeouts.Prepared},
		{"creating", t.Creating, &g.Timeouts.Creating}, {"terminating", t.Terminating, &g.Timeouts.Terminating},
	} {
		if f.v == nil {
			continue
		}
		d, err := time.ParseDuration(*f.v)
		if err != nil || d < 0 {
			return invalid("timeouts."+f.name, "must be a duration such as \"90s\" or \"15m\" (\"0s\": no bound)")
		}
		*f.dst = d
	}
	return nil
}

// applyGroupSlots sets the slots a session gets when it names none, and
// the least it may ask for.
func (s *Server) applyGroupSlots(g *domain.ResourceGroup, req v1.GroupRequest) error {
	if req.DefaultSlots != nil {
		v, e := s.parseSlots("default_slots", *req.DefaultSlots, false)
		if e != nil {
			return e
		}
		g.DefaultSlots = v
	}
	if req.MinSlots != nil {
		v, e := s.parseSlots("min_slots", *req.MinSlots, false)
		if e != nil {
			return e
		}
		g.MinSlots = v
	}
	return nil
}

// applyGroupTimeLimits sets the sessions' default and longest time
// limits and the interactive idle timeout.
func applyGroupTimeLimits(g *domain.ResourceGroup, req v1.GroupRequest) error {
	for _, f := range []durationField{
		{"default_time_limit", req.DefaultTimeLimit, &g.DefaultTimeLimit},
		{"max_time_limit", req.MaxTimeLimit, &g.MaxTimeLimit},
		{"idle_timeout", req.IdleTimeout, &g.IdleTimeout},
	} {
		if f.v == nil {
			continue
		}
		d, err := time.ParseDuration(*f.v)
		if err != nil || d < 0 {
			return invalid(f.name, "must be a duration such as \"2h\" or \"30m\" (\"0s\": none)")
		}
		*f.dst = d
	}
	return nil
}

// checkGroup refuses a group whose fields, each valid alone, do not fit
// together, or that the scheduler cannot run.
func (s *Server) checkGroup(g domain.ResourceGroup) error {
	// A default above the maximum would refuse every session that asks
	// for no limit.
	if g.MaxTimeLimit > 0 && g.DefaultTimeLimit > g.MaxTimeLimit {
		return invalid("default_time_limit", "must be at most max_time_limit %s, not %s",
			formatDuration(g.MaxTimeLimit), formatDuration(g.DefaultTimeLimit))
	}
	// A default below the minimum would refuse every request that leaves
	// that slot out, which no operator means.
	def, floor := g.EffectiveDefaultSlots(s.slots), g.EffectiveMinSlots(s.slots)
	for i, d := range g.DefaultSlots {
		if d != 0 && d < floor[i] {
			t := s.slots.Type(domain.SlotID(i))
			return invalid("default_slots."+t.Name, "must be at least the minimum %s, not %s",
				domain.FormatQuantity(t.Kind, floor[i]), domain.FormatQuantity(t.Kind, def[i]))
		}
	}
	// The registry has the last word, so a group the scheduler cannot
	// run is never stored.
	if err := s.plugins.CheckGroup(g); err != nil {
		return invalid("", "%v", err)
	}
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) error {
	var req v1.CreateUserRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if !namePattern.MatchString(req.Name) {
		return invalid("name", "%s", nameRule)
	}
	role := store.RoleUser
	switch req.Role {
	case "", string(store.RoleUser):
	case string(store.RoleAdmin):
		role = store.RoleAdmin
	default:
		return invalid("role", "unknown role %q (want admin or user)", req.Role)
	}
	project, domainName := req.Project, req.Domain
	if project == "" {
		project = "default"
	}
	if domainName == "" {
		domainName = "default"
	}
	if !namePattern.MatchString(project) {
		return invalid("project", "%s", nameRule)
	}
	if !namePattern.MatchString(domainName) {
		return invalid("domain", "%s", nameRule)
	}
	u := store.User{ID: newUUID(), Name: req.Name, Role: role, Project: project, Domain: domainName,
		CreatedAt: s.clock.Now().UTC().Truncate(time.Microsecond)}
	token := NewToken()
	if err := s.store.CreateUser(r.Context(), u, HashToken(token)); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return &apiError{Status: http.StatusConflict, Code: codeConflict,
				Message: fmt.Sprintf("user %q already exists", req.Name), Field: "name"}
		}
		return err
	}
	writeJSON(w, http.StatusCreated, v1.NewUser{User: userOut(u), Token: token})
	return nil
}

// rotateToken replaces the tokens of the user the path names (an
// admin's call) or of the caller with one new token.
func (s *Server) rotateToken(w http.ResponseWriter, r *http.Request) error {
	u := caller(r.Context())
	if name := r.PathValue("name"); name != "" {
		users, err := s.store.ListUsers(r.Context())
		if err != nil {
			return err
		}
		i := slices.IndexFunc(users, func(x store.User) bool { return x.Name == name })
		if i < 0 {
			return notFound("no user %q", name)
		}
		u = users[i]
	}
	ttl, err := tokenTTL(r)
	if err != nil {
		return err
	}
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	var expires time.Time
	out := v1.NewUser{User: userOut(u), Token: NewToken()}
	if ttl > 0 {
		expires = now.Add(ttl)
		out.ExpiresAt = &expires
	}
	if err := s.store.ReplaceTokens(r.Context(), u.ID, HashToken(out.Token), now, expires); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// tokenTTL reads the optional body of a token replacement: without one
// (or without ttl) the token never expires.
func tokenTTL(r *http.Request) (time.Duration, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, invalid("", "cannot read the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return 0, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req v1.TokenRequest
	if err := decode(r, &req); err != nil {
		return 0, err
	}
	ttl, aerr := parseDuration("ttl", req.TTL, 0)
	if aerr != nil {
		return 0, aerr
	}
	if req.TTL != "" && (ttl <= 0 || ttl > maxUserTokenTTL) {
		return 0, invalid("ttl", "must be above 0 and at most %s, not %s", maxUserTokenTTL, req.TTL)
	}
	return ttl, nil
}

// maxUserTokenTTL bounds a user token's lifetime when one is asked for.
const maxUserTokenTTL = 10 * 365 * 24 * time.Hour

func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, userOut(caller(r.Context())))
	return nil
}

func policyPath(r *http.Request) (domain.PolicyScope, string, error) {
	scope, err := domain.ParsePolicyScope(r.PathValue("scope"))
	if err != nil {
		return "", "", invalid("scope", "%v", err)
	}
	name := r.PathValue("name")
	if !namePattern.MatchString(name) {
		return "", "", invalid("name", "%s", nameRule)
	}
	return scope, name, nil
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) error {
	scope, name, err := policyPath(r)
	if err != nil {
		return err
	}
	var req v1.PolicyRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	limits, e := s.parseSlots("max_slots", req.MaxSlots, true)
	if e != nil {
		return e
	}
	if n := req.MaxConcurrentSessions; n < 0 || n > maxPolicyCount {
		return invalid("max_concurrent_sessions", "must be 0 (no limit) to %d", maxPolicyCount)
	}
	if n := req.MaxPendingSessions; n < 0 || n > maxPolicyCount {
		return invalid("max_pending_sessions", "must be 0 (no limit) to %d", maxPolicyCount)
	}
	p := domain.Policy{Scope: scope, Name: name, MaxSlots: limits, MaxConcurrentSessions: req.MaxConcurrentSessions,
		MaxPendingSessions: req.MaxPendingSessions}
	if err := s.store.PutPolicy(r.Context(), p); err != nil {
		return err
	}
	s.sessions.Mark() // a raised limit may let sessions start
	writeJSON(w, http.StatusOK, s.policyOut(p))
	return nil
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) error {
	scope, name, err := policyPath(r)
	if err != nil {
		return err
	}
	p, err := s.store.GetPolicy(r.Context(), scope, name)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("no policy for %s %s", scope, name)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.policyOut(p))
	return nil
}
