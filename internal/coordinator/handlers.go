package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// lifecycle returns the seed's table row for a handler.
func lifecycle(name domain.HandlerName) domain.LifecycleHandler {
	for _, h := range domain.LifecycleHandlers() {
		if h.Name == name {
			return h
		}
	}
	panic("no lifecycle handler " + string(name)) // the table is a constant
}

// targets loads the sessions in a lifecycle handler's session statuses. The
// handler works only on those matching its kernel filter (works), but all of
// them are subject to the residence bound, so a session whose kernels left
// the filter cannot sit in its status forever.
func (c *Coordinator) targets(ctx context.Context, h domain.LifecycleHandler) ([]store.SessionWithKernels, error) {
	sessions, err := c.store.ListSessions(ctx, store.SessionFilter{Statuses: h.TargetSession, Limit: c.conf().BatchSize})
	if err != nil {
		return nil, fmt.Errorf("%s: list sessions: %w", h.Name, err)
	}
	out, err := c.withKernels(ctx, sessions)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Name, err)
	}
	return out, nil
}

// withKernels pairs sessions with their kernels, read in one query.
func (c *Coordinator) withKernels(ctx context.Context, sessions []domain.Session) ([]store.SessionWithKernels, error) {
	if len(sessions) == 0 {
		return nil, nil
	}
	ids := make([]domain.SessionID, len(sessions))
	for i, s := range sessions {
		ids[i] = s.ID
	}
	kernels, err := c.store.ListKernels(ctx, store.KernelFilter{Sessions: ids})
	if err != nil {
		return nil, fmt.Errorf("list kernels: %w", err)
	}
	byS := make(map[domain.SessionID][]domain.Kernel, len(sessions))
	for _, k := range kernels {
		byS[k.SessionID] = append(byS[k.SessionID], k)
	}
	out := make([]store.SessionWithKernels, 0, len(sessions))
	for _, s := range sessions {
		out = append(out, store.SessionWithKernels{Session: s, Kernels: byS[s.ID]})
	}
	return out, nil
}

// works reports whether the handler's kernel filter selects the session.
func works(h domain.LifecycleHandler, t store.SessionWithKernels) bool {
	return h.TargetKernel == nil || slices.ContainsFunc(t.Kernels, func(k domain.Kernel) bool {
		return slices.Contains(h.TargetKernel, k.Status)
	})
}

// ScheduleNewSessions runs one scheduling round per resource group and
// applies each plan through the store's guarded plan applier.
func (c *Coordinator) ScheduleNewSessions(ctx context.Context) error {
	defer c.metrics.run(domain.HandlerScheduleNewSessions, time.Now())
	h := lifecycle(domain.HandlerScheduleNewSessions)
	gs, err := c.groups(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(gs.m))
	for n := range gs.m {
		names = append(names, n)
	}
	slices.Sort(names)
	// Read what changed before any snapshot: a change landing in between
	// is then seen again by the next cycle, never missed.
	now := c.clock.Now()
	if err := c.idle.observe(ctx, c.store, now, c.conf().ChangeRetention); err != nil {
		return fmt.Errorf("read changes: %w", err)
	}
	gens, err := c.store.GroupGenerations(ctx)
	if err != nil {
		return fmt.Errorf("read group generations: %w", err)
	}
	// A drain, a group's idle timeout: what moves a group's generation may
	// move the next due time too.
	var sum int64
	for _, g := range gens {
		sum += g
	}
	if c.gens.Swap(sum) != sum {
		c.dueStale.Store(true)
	}
	for _, name := range names {
		gen := generation(gens, name)
		if c.idle.skip(name, gen, now) {
			continue
		}
		start := time.Now()
		r, err := c.scheduleGroup(ctx, h, name, gs)
		if err != nil || r.scheduled+r.unschedulable > 0 {
			c.metrics.gang.round(name, start, r.scheduled, r.unschedulable, err)
		}
		c.idle.remember(name, gen, err == nil && r.empty, err == nil && r.idle, r.due)
		if err != nil {
			return err
		}
	}
	return nil
}

// waitNotes records the plan's waiting sessions that only wait again:
// within their PENDING bound (one past it expires through apply, which
// moves it) and not preempting (their note follows the preemption's).
// It returns their history entries and the set it recorded, which apply
// then leaves out.
func (c *Coordinator) waitNotes(h domain.LifecycleHandler, snap *framework.Snapshot, plan framework.Plan,
	gs groups, now time.Time) ([]domain.HistoryEntry, map[domain.SessionID]bool) {
	if len(plan.Waiting) == 0 {
		return nil, nil
	}
	preempting := make(map[domain.SessionID]bool, len(plan.Preemptions))
	for _, p := range plan.Preemptions {
		preempting[p.Preemptor] = true
	}
	pending := make(map[domain.SessionID]*domain.Session, len(snap.Pending))
	for i := range snap.Pending {
		pending[snap.Pending[i].Session.ID] = &snap.Pending[i].Session
	}
	hist := make([]domain.HistoryEntry, 0, len(plan.Waiting))
	recorded := make(map[domain.SessionID]bool, len(plan.Waiting))
	for _, w := range plan.Waiting {
		s, ok := pending[w.Session]
		if !ok || preempting[w.Session] || recorded[w.Session] {
			continue
		}
		d := decide(factsAbout(h, handlerPolicy{}, true, s, gs, skipped, describe(w.Blockers, snap.Slots), now))
		if d.Result != domain.ResultSkipped {
			continue
		}
		hist = append(hist, domain.HistoryEntry{Subject: s.ID, At: now, Cause: h.Name, Result: d.Result,
			From: s.Status, To: s.Status, Message: d.Message, Attempt: 1})
		c.metrics.outcome(h.Name, d.Result)
		recorded[s.ID] = true
	}
	return hist, recorded
}

// round is what a scheduling round leaves for idleRounds.
type round struct {
	// empty: no session is left waiting.
	empty bool
	// idle: it placed, refused and cancelled nothing; the next may be
	// skipped until something relevant changes or due passes.
	idle bool
	due  time.Time
	// scheduled and unschedulable count the round's sessions for
	// sokovan_scheduling_attempts_total.
	scheduled, unschedulable int
}

// scheduleGroup runs one round for the group.
func (c *Coordinator) scheduleGroup(ctx context.Context, h domain.LifecycleHandler, group string, gs groups) (round, error) {
	now := c.clock.Now()
	snap, err := c.store.LoadSnapshot(ctx, group, now)
	if err != nil {
		return round{}, fmt.Errorf("snapshot of %s: %w", group, err)
	}
	c.metrics.queue(group, len(snap.Pending))
	if len(snap.Pending) == 0 {
		return round{empty: true}, nil
	}
	plan, err := c.sched.Schedule(&snap)
	if err != nil {
		return round{}, fmt.Errorf("schedule %s: %w", group, err)
	}
	// The history of sessions that only wait again depends on nothing the
	// applier decides, so it is written beside it, on a connection of its
	// own: at 100k pending sessions these are most of the round's history
	// rows, and the two writes touch disjoint sessions (on SQLite, with its
	// one writer, they take turns).
	waitHist, recorded := c.waitNotes(h, &snap, plan, gs, now)
	histDone := make(chan error, 1)
	go func() { histDone <- c.store.AppendHistory(ctx, waitHist) }()
	applied, err := c.store.ApplyPlan(ctx, plan, now)
	herr := <-histDone
	if err != nil {
		return round{}, fmt.Errorf("apply plan of %s: %w", group, err)
	}
	if herr != nil {
		// The placements are committed: the round goes on to record
		// them, and the waits are noted again by the next round.
		herr = fmt.Errorf("%s: history of waiting sessions of %s: %w", h.Name, group, herr)
	}
	r := round{
		// Every pending session placed: the queue is empty now.
		empty: len(plan.Waiting) == 0 && len(plan.Impossible) == 0 && len(applied.Rejected) == 0 &&
			len(applied.Applied) == len(snap.Pending),
		idle: len(applied.Applied) == 0 && len(applied.Rejected) == 0 && len(plan.Impossible) == 0 &&
			len(applied.Preempted) == 0,
		due:           earliest(idleDue(snap.Pending, gs.timeout(group, domain.SessionPending), now), preemptDue(&snap, plan, now)),
		scheduled:     len(applied.Applied),
		unschedulable: len(applied.Rejected) + len(plan.Waiting) + len(plan.Impossible),
	}
	c.metrics.gang.gangs(&snap, applied.Applied)
	c.metrics.round(group, len(applied.Applied), len(applied.Rejected), len(plan.Waiting), len(plan.Impossible))
	c.metrics.reserve.reservations(group, plan, applied.Applied)
	if err := c.preempted(ctx, group, applied.Preempted, now); err != nil {
		return round{}, err
	}
	targets := make([]store.SessionWithKernels, 0, len(snap.Pending)-len(recorded))
	submitted := make(map[domain.SessionID]time.Time, len(snap.Pending))
	for _, p := range snap.Pending {
		submitted[p.Session.ID] = p.Session.CreatedAt
		if !recorded[p.Session.ID] {
			targets = append(targets, store.SessionWithKernels{Session: p.Session, Kernels: p.Kernels})
		}
	}
	for _, id := range applied.Applied {
		c.metrics.placed(group, now.Sub(submitted[id]))
	}
	res := Result{Successes: applied.Applied, successApplied: true}
	for _, r := range applied.Rejected {
		// Lost a race with another manager or an agent change: it waits
		// for the next round, which sees the new state.
		res.Skipped = append(res.Skipped, Note{Session: r.Session,
			Message: fmt.Sprintf("placement re-check failed (%s %s %s); retrying", r.Reason, r.Agent, r.Slot)})
	}
	for _, d := range plan.Waiting {
		if !recorded[d.Session] {
			res.Skipped = append(res.Skipped, Note{Session: d.Session, Message: describe(d.Blockers, snap.Slots)})
		}
	}
	if len(applied.Applied) > 0 {
		c.Mark()
	}
	if r.empty {
		// The next rounds are skipped while it stays so; the gauge must
		// not keep the queue this round found.
		c.metrics.queue(group, 0)
	}
	if err := c.apply(ctx, h, handlerPolicy{}, targets, res, gs); err != nil {
		return round{}, err
	}
	return r, errors.Join(c.cancelImpossible(ctx, h, plan.Impossible, snap.Slots, now), herr)
}

// cancelImpossible cancels sessions waiting cannot help, with the reason.
func (c *Coordinator) cancelImpossible(ctx context.Context, h domain.LifecycleHandler, ds []framework.Decision,
	reg *domain.Registry, now time.Time) error {
	var hist []domain.HistoryEntry
	for _, d := range ds {
		msg := describe(d.Blockers, reg)
		moved, err := c.store.TransitionSessions(ctx, []domain.SessionID{d.Session},
			[]domain.SessionStatus{domain.SessionPending}, *h.Transitions.GiveUp, msg, now)
		if err != nil {
			return fmt.Errorf("cancel %s: %w", d.Session, err)
		}
		if len(moved) == 1 {
			hist = append(hist, domain.HistoryEntry{Subject: d.Session, At: now, Cause: h.Name,
				Result: domain.ResultGiveUp, From: domain.SessionPending, To: domain.SessionCancelled, Message: msg, Attempt: 1})
			c.metrics.outcome(h.Name, domain.ResultGiveUp)
		}
	}
	if len(hist) == 0 {
		return nil
	}
	return c.store.AppendHistory(ctx, hist)
}

// describe joins blocker messages, impossible ones first.
func describe(bs []framework.Blocker, reg *domain.Registry) string {
	var first, rest []string
	for _, b := range bs {
		// A reservation's backfill count changes nearly every round; kept
		// in the history, it would add a row each time.
		if b.Kind == framework.BlockReservation {
			b.Requested = 0
		}
		if b.Impossible {
			first = append(first, b.Message(reg))
		} else {
			rest = append(rest, b.Message(reg))
		}
	}
	return strings.Join(append(first, rest...), "; ")
}

func nonTerminal() []domain.KernelStatus {
	var out []domain.KernelStatus
	for _, s := range domain.KernelStatuses() {
		if !s.Terminal() {
			out = append(out, s)
		}
	}
	return out
}

// Promote runs one promotion handler: sessions whose kernels meet its
// match move to its success status; kernels are left as they are.
func (c *Coordinator) Promote(ctx context.Context, p domain.PromotionHandler) (err error) {
	defer c.metrics.run(p.Name, time.Now())
	now := c.clock.Now()
	// Only the sessions the feed names since the last complete check can
	// match now (touched.go).
	among, upTo, all, err := c.touched.since(ctx, c.store, p.Name, now, c.conf().ChangeRetention)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	defer func() {
		if err != nil {
			c.touched.forget(p.Name)
		} else {
			c.touched.done(p.Name, upTo)
		}
	}()
	if !all && len(among) == 0 {
		return nil
	}
	ids, err := c.store.SessionsMatching(ctx, p.TargetSession, p.CheckKernel, p.Match, among...)
	if err != nil || len(ids) == 0 {
		return err
	}
	byReason := map[string][]domain.SessionID{"": ids}
	if p.Name == domain.HandlerDetectTermination {
		if byReason, err = c.endedKernels(ctx, ids); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	// Each move writes its history in its own transaction; the guard
	// reads where each session came from.
	var moved []store.Moved
	for _, reason := range slices.Sorted(maps.Keys(byReason)) {
		m, err := c.store.MoveSessions(ctx, store.Move{IDs: byReason[reason], From: p.TargetSession,
			To: domain.Transition{Session: p.Success, Judge: p.Judge}, Reason: reason, Now: now,
			Note: &store.MoveNote{Handler: p.Name, Result: domain.ResultSuccess, Message: reason}})
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		moved = append(moved, m...)
	}
	for _, m := range moved {
		c.metrics.outcome(p.Name, domain.ResultSuccess)
		if p.Success == domain.SessionRunning && !m.CreatedAt.IsZero() {
			c.metrics.started(now.Sub(m.CreatedAt))
		}
	}
	if p.Success == domain.SessionRunning && len(moved) > 0 {
		c.dueStale.Store(true) // their time limits count from now
	}
	if len(moved) > 0 {
		c.Mark()
	}
	return nil
}

// endedKernels groups running sessions that DetectTermination ends by the
// reason it records: the first of their kernels to have ended (the lower
// cluster index among ones that ended at once), and how (its exit code, or its status and reason). That is what
// show and why answer for the session once it has ended.
func (c *Coordinator) endedKernels(ctx context.Context, ids []domain.SessionID) (map[string][]domain.SessionID, error) {
	ks, err := c.store.ListKernels(ctx, store.KernelFilter{Sessions: ids,
		Statuses: []domain.KernelStatus{domain.KernelTerminated, domain.KernelCancelled, domain.KernelError}})
	if err != nil {
		return nil, err
	}
	first := make(map[domain.SessionID]domain.Kernel, len(ids))
	for _, k := range ks {
		f, ok := first[k.SessionID]
		if !ok || k.StatusChangedAt.Before(f.StatusChangedAt) ||
			(k.StatusChangedAt.Equal(f.StatusChangedAt) && k.ClusterIdx < f.ClusterIdx) {
			first[k.SessionID] = k
		}
	}
	out := map[string][]domain.SessionID{}
	for _, id := range ids {
		reason := "a kernel ended"
		if k, ok := first[id]; ok {
			switch {
			case k.Status == domain.KernelTerminated && k.ExitCode != nil:
				reason = fmt.Sprintf("kernel %s#%d exited with code %d", k.ClusterRole, k.ClusterIdx, *k.ExitCode)
			case k.StatusReason != "":
				reason = fmt.Sprintf("kernel %s#%d ended %s: %s", k.ClusterRole, k.ClusterIdx, k.Status, k.StatusReason)
			default:
				reason = fmt.Sprintf("kernel %s#%d ended %s", k.ClusterRole, k.ClusterIdx, k.Status)
			}
		}
		out[reason] = append(out[reason], id)
	}
	return out, nil
}
