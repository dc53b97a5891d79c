package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// dryRunFresh is how long a dry run is reused while the group's input is
// unchanged: only time-driven blockers (start times) can move in between.
const dryRunFresh = 2 * time.Second

// dryRunTimeout bounds one dry run, whoever waits for it.
const dryRunTimeout = time.Minute

// dryRunResult is one round decided on one snapshot, and the version of
// the store's scheduling input it was taken at.
type dryRunResult struct {
	snap    framework.Snapshot
	plan    framework.Plan
	version inputVersion
}

// inputVersion is what changes whenever a group's scheduling input does:
// the change feed's head (sessions and kernels) and the group's generation
// (its agents, itself, policies).
type inputVersion struct {
	change, generation int64
}

func (s *Server) inputVersion(ctx context.Context, group string) (inputVersion, error) {
	change, err := s.store.LastChange(ctx)
	if err != nil {
		return inputVersion{}, err
	}
	gens, err := s.store.GroupGenerations(ctx)
	if err != nil {
		return inputVersion{}, err
	}
	return inputVersion{change: change, generation: gens[group]}, nil
}

// dryRun runs one scheduling round of the group on a snapshot and returns
// the plan without applying it: the scheduler is pure, so this is exactly
// what the next round would decide now. Callers share one run per group
// while the input is unchanged, and must not modify what they get.
func (s *Server) dryRun(ctx context.Context, group string) (framework.Snapshot, framework.Plan, error) {
	// Read before the snapshot is, so a result at this version holds
	// everything the caller has seen (its own session, for why).
	v, err := s.inputVersion(ctx, group)
	if err != nil {
		return framework.Snapshot{}, framework.Plan{}, err
	}
	res, err := s.dry.get(ctx, group, func(r dryRunResult) bool { return r.version == v })
	return res.snap, res.plan, err
}

func (s *Server) computeDryRun(ctx context.Context, group string) (dryRunResult, error) {
	v, err := s.inputVersion(ctx, group)
	if err != nil {
		return dryRunResult{}, err
	}
	snap, err := s.store.LoadSnapshot(ctx, group, s.clock.Now())
	if err != nil {
		return dryRunResult{}, err
	}
	plan, err := s.sched.Schedule(&snap)
	if err != nil {
		return dryRunResult{}, fmt.Errorf("dry run of group %s: %w", group, err)
	}
	return dryRunResult{snap: snap, plan: plan, version: v}, nil
}

// visibleBlocker is a blocker as the caller may see it: the head of a
// blocked queue may be anyone's, and a user learns where they stand, not
// whose session it is.
func (s *Server) visibleBlocker(u store.User, owners map[domain.SessionID]string, b framework.Blocker) (v1.Blocker, bool) {
	bo := s.blockerOut(b)
	head, isSession := strings.CutPrefix(b.Scope, "session:")
	other := isSession && !isAdmin(u) && owners[domain.SessionID(head)] != u.Name
	hidden := b.Kind == framework.BlockQueuePosition && other
	if hidden {
		bo.Scope = "another session"
	}
	if b.Kind == framework.BlockReservation && other {
		// Whose reservation it is stays private; when it starts does not.
		bo.Scope = "another session"
		bo.Message = strings.Replace(bo.Message, "session "+head, "another session", 1)
	}
	if b.Kind == framework.BlockPreempting && !isAdmin(u) {
		// Victims may be anyone's: a user learns how many, not which.
		n := len(strings.Split(b.Scope, ", "))
		bo.Scope = fmt.Sprintf("%d sessions", n)
		bo.Message = fmt.Sprintf("preempting %d lower priority session(s); starts when their slots are released", n)
	}
	return bo, hidden
}

func (s *Server) queue(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	name := r.PathValue("name")
	if !validID(name) {
		return notFound("no resource group %q", name)
	}
	g, err := s.store.GetResourceGroup(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("no resource group %q", name)
	}
	if err != nil {
		return err
	}
	snap, plan, err := s.dryRun(ctx, g.Name)
	if err != nil {
		return err
	}
	out := v1.Queue{ResourceGroup: g.Name, Sequencer: groupOut(s.slots, g).Sequencer, Pending: len(snap.Pending),
		Items: []v1.QueueEntry{}}
	byID := make(map[domain.SessionID]*framework.PendingSession, len(snap.Pending))
	owners := make(map[domain.SessionID]string, len(snap.Pending))
	for i := range snap.Pending {
		p := &snap.Pending[i]
		byID[p.Session.ID], owners[p.Session.ID] = p, p.Session.Owner.User
	}
	outcome := map[domain.SessionID]string{}
	blockers := map[domain.SessionID][]framework.Blocker{}
	for _, p := range plan.Placements {
		outcome[p.Session] = "start"
	}
	for _, d := range plan.Waiting {
		outcome[d.Session], blockers[d.Session] = "wait", d.Blockers
	}
	for _, d := range plan.Impossible {
		outcome[d.Session], blockers[d.Session] = "never", d.Blockers
	}
	// The round's order; a session it never reached (none today) goes
	// last, in the snapshot's order, so the view always shows every one.
	order := append([]domain.SessionID(nil), plan.Tried...)
	tried := make(map[domain.SessionID]bool, len(order))
	for _, id := range order {
		tried[id] = true
	}
	for _, p := range snap.Pending {
		if !tried[p.Session.ID] {
			order = append(order, p.Session.ID)
		}
	}
	factors := s.fairShareFactors(&snap)
	for i, id := range order {
		p := byID[id]
		if p == nil {
			continue
		}
		if !isAdmin(u) && p.Session.Owner.User != u.Name {
			out.Hidden++
			continue
		}
		e := v1.QueueEntry{Position: i + 1, ID: string(id), Name: p.Session.Name, Owner: p.Session.Owner.User,
			Priority: p.Session.Priority, Outcome: outcome[id], CreatedAt: p.Session.CreatedAt.UTC(),
			RequestedSlots: s.slots.FormatSlots(p.Session.Requested), ClusterSize: p.Session.ClusterSize,
			Blockers: []v1.Blocker{}, FairShare: factors[assocOf(p.Session)]}
		if e.Outcome == "" {
			e.Outcome = "wait"
		}
		// The same replay why reports, cached per group, so a queue of
		// any length costs one replay every few seconds.
		if e.EstimatedStart, err = s.estimatedStart(ctx, g.Name, id); err != nil {
			// As why does: the queue stands without an estimate.
			s.log.Warn("no start estimate", "group", g.Name, "err", err)
			e.EstimatedStart = nil
		}
		for _, b := range blockers[id] {
			bo, hidden := s.visibleBlocker(u, owners, b)
			if hidden {
				bo.Message = "queued behind another session, which does not fit yet (head-of-line: block)"
			}
			e.Blockers = append(e.Blockers, bo)
		}
		out.Items = append(out.Items, e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// usage sums what the caller's sessions hold and ask for, and what each
// scope that has a policy over the caller holds: the numbers quotas are
// checked against.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	live := []domain.SessionStatus{domain.SessionPending}
	for _, st := range domain.SessionStatuses() {
		if st.HoldsResources() {
			live = append(live, st)
		}
	}
	sum := func(f store.SessionFilter) (held, asked domain.Vec, running, pending int, err error) {
		f.Statuses = live
		sessions, err := s.store.ListSessions(ctx, f)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		held, asked = s.slots.NewVec(), s.slots.NewVec()
		for _, ss := range sessions {
			all := ss.Requested.Scale(ss.ClusterSize)
			if ss.Status == domain.SessionPending {
				asked.Add(all)
				pending++
			} else {
				held.Add(all)
				running++
			}
		}
		return held, asked, running, pending, nil
	}
	held, asked, running, pending, err := sum(store.SessionFilter{User: u.Name})
	if err != nil {
		return err
	}
	out := v1.Usage{User: u.Name, Occupied: s.slots.FormatSlots(held), Pending: s.slots.FormatSlots(asked),
		RunningSessions: running, PendingSessions: pending, Limits: []v1.UsageLimit{}}
	for _, sc := range []struct {
		scope  domain.PolicyScope
		name   string
		filter store.SessionFilter
	}{
		{domain.ScopeUser, u.Name, store.SessionFilter{User: u.Name}},
		{domain.ScopeProject, u.Project, store.SessionFilter{Project: u.Project}},
		{domain.ScopeDomain, u.Domain, store.SessionFilter{Domain: u.Domain}},
	} {
		if sc.name == "" {
			continue
		}
		p, err := s.store.GetPolicy(ctx, sc.scope, sc.name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		// The user's own sums were read above.
		held, running, pending := held, running, pending
		if sc.scope != domain.ScopeUser {
			if held, _, running, pending, err = sum(sc.filter); err != nil {
				return err
			}
		}
		po := s.policyOut(p)
		used := map[string]string{}
		for slot := range po.MaxSlots {
			if id, ok := s.slots.Lookup(slot); ok {
				used[slot] = s.slots.Format(id, held.At(id))
			}
		}
		out.Limits = append(out.Limits, v1.UsageLimit{Scope: po.Scope, Name: po.Name, MaxSlots: po.MaxSlots, Used: used,
			MaxConcurrentSessions: p.MaxConcurrentSessions, ConcurrentSessions: running,
			MaxPendingSessions: p.MaxPendingSessions, PendingSessions: pending})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	users, err := s.store.ListUsers(r.Context())
	if err != nil {
		return err
	}
	return writeList(w, users, userOut)
}
