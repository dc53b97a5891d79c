package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
	"github.com/sokovan-go/sokovan/internal/store/internal/planguard"
)

// ApplyPlan locks the plan's sessions and agents, re-checks every
// placement against what the locks returned, and writes the ones that
// still hold: one statement per table whatever the plan's size.
func (s *Store) ApplyPlan(ctx context.Context, plan framework.Plan, now time.Time) (store.ApplyResult, error) {
	sessionIDs, agentIDs := planguard.IDs(plan)
	var res store.ApplyResult
	err := s.write(ctx, "apply plan of group "+plan.Group, func(tx txn) error {
		// Preemptions first: they lock only sessions, which every path
		// locks before agents.
		preempted, err := s.applyPreemptions(ctx, tx, plan, now)
		if err != nil {
			return err
		}
		sessions, agents, err := s.lockPlanRows(ctx, tx, plan.Group, sessionIDs, agentIDs)
		if err != nil {
			return err
		}
		if err := s.hook(store.FaultRead); err != nil {
			return err
		}
		out := planguard.Evaluate(s.reg, plan, sessions, agents)
		if err := s.writePlan(ctx, tx, out, agents, now); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, saveGroupCursor, string(plan.Cursor), plan.Group); err != nil {
			return err
		}
		if err := s.hook(store.FaultCommit); err != nil {
			return err
		}
		res = store.ApplyResult{Applied: out.Applied, Rejected: out.Rejected, Preempted: preempted}
		return nil
	})
	if err != nil {
		return store.ApplyResult{}, err
	}
	return res, nil
}

// lockPlanRows checks that the group exists, then locks the sessions and
// then the agents, in one batch. Kernels need no lock of their own: they
// are written only under their session's.
func (s *Store) lockPlanRows(ctx context.Context, tx txn, group string, sessionIDs, agentIDs []string) (
	map[domain.SessionID]*planguard.Session, map[domain.AgentID]*planguard.Agent, error) {
	groupFound := false
	sessions := make(map[domain.SessionID]*planguard.Session, len(sessionIDs))
	agents := make(map[domain.AgentID]*planguard.Agent, len(agentIDs))
	err := tx.batch(ctx,
		Stmt{SQL: selectGroupCursor, Args: []any{group}, Row: func(sc codec.Scanner) error {
			groupFound = true
			var cursor string
			return sc.Scan(&cursor)
		}},
		Stmt{SQL: lockPlanSessions, Args: []any{List(sessionIDs)}, Row: func(sc codec.Scanner) error {
			var id, status, group string
			if err := sc.Scan(&id, &status, &group); err != nil {
				return err
			}
			st, err := domain.ParseSessionStatus(status)
			if err != nil {
				return codec.Corrupt("sessions", id, "status", err)
			}
			sessions[domain.SessionID(id)] = &planguard.Session{Status: st, Group: group,
				Kernels: map[domain.KernelID]planguard.Kernel{}}
			return nil
		}},
		Stmt{SQL: selectPlanKernels, Args: []any{List(sessionIDs)}, Row: func(sc codec.Scanner) error {
			var id, session, status, requested string
			if err := sc.Scan(&id, &session, &status, &requested); err != nil {
				return err
			}
			k, err := planguard.DecodeKernel(s.reg, id, status, requested)
			if err != nil {
				return err
			}
			sessions[domain.SessionID(session)].Kernels[domain.KernelID(id)] = k
			return nil
		}},
		Stmt{SQL: lockPlanAgents, Args: []any{List(agentIDs)}, Row: func(sc codec.Scanner) error {
			var a planguard.Agent
			var id, status, capacity, occupied, devices string
			if err := sc.Scan(&id, &a.Group, &status, &a.Schedulable, &capacity, &occupied, &a.KernelCount, &a.MaxKernels,
				&devices); err != nil {
				return err
			}
			a.ID = domain.AgentID(id)
			if err := planguard.DecodeAgent(s.reg, &a, status, capacity, occupied); err != nil {
				return err
			}
			if err := codec.DecodeDevices("agents", id, devices, &a.Devices); err != nil {
				return err
			}
			agents[a.ID] = &a
			return nil
		}},
		// After the agents' lock: a kernel is granted devices only under
		// its agent's lock, so no grant can appear behind this read.
		Stmt{SQL: selectHeldDevices, Args: []any{List(agentIDs)}, Row: func(sc codec.Scanner) error {
			agent, grants, err := scanGrants(sc)
			if a := agents[agent]; err == nil && a != nil {
				a.Held = addGrants(a.Held, grants)
			}
			return err
		}},
	)
	if err == nil && !groupFound {
		err = fmt.Errorf("resource group %q: %w", group, store.ErrNotFound)
	}
	return sessions, agents, err
}

func (s *Store) writePlan(ctx context.Context, tx txn, out planguard.Result,
	agents map[domain.AgentID]*planguard.Agent, now time.Time) error {
	if len(out.Applied) == 0 {
		return nil
	}
	if err := tx.execN(ctx, len(out.Applied), scheduleSessions, ts(now), List(codec.Strings(out.Applied))); err != nil {
		return err
	}
	if err := s.hook(store.FaultSessions); err != nil {
		return err
	}
	kernels, on, devices := make([]string, len(out.Kernels)), make([]string, len(out.Kernels)), make([]string, len(out.Kernels))
	for i, k := range out.Kernels {
		kernels[i], on[i], devices[i] = string(k.Kernel), string(k.Agent), codec.JSONGrants(k.Devices)
	}
	if err := tx.execN(ctx, len(kernels), scheduleKernels, ts(now), Rows{kernels, on, devices}); err != nil {
		return err
	}
	if err := s.hook(store.FaultKernels); err != nil {
		return err
	}
	if err := s.writeOccupancy(ctx, tx, planguard.Changed(agents)); err != nil {
		return err
	}
	return s.hook(store.FaultAgents)
}

func (s *Store) writeOccupancy(ctx context.Context, tx txn, agents []*planguard.Agent) error {
	if len(agents) == 0 {
		return nil
	}
	ids, occupied, counts := make([]string, len(agents)), make([]string, len(agents)), make([]int32, len(agents))
	for i, a := range agents {
		occ, err := codec.EncodeSlots(s.reg, a.Occupied)
		if err != nil {
			return fmt.Errorf("agent %s: %w: %v", a.ID, codec.ErrInconsistent, err)
		}
		ids[i], occupied[i], counts[i] = string(a.ID), occ, int32(a.KernelCount)
	}
	return tx.execN(ctx, len(ids), writeOccupancy, Rows{ids, occupied, counts})
}

// TransitionSessions moves the sessions that are in one of from, and their
// kernels, releasing what the kernels stop holding.
func (s *Store) TransitionSessions(ctx context.Context, ids []domain.SessionID, from []domain.SessionStatus,
	to domain.Transition, reason string, now time.Time) ([]domain.SessionID, error) {
	moved, err := s.MoveSessions(ctx, store.Move{IDs: ids, From: from, To: to, Reason: reason, Now: now})
	if err != nil {
		return nil, err
	}
	changed := make([]domain.SessionID, len(moved))
	for i, m := range moved {
		changed[i] = m.ID
	}
	return changed, nil
}

// MoveSessions is TransitionSessions that also writes the move's history
// in its transaction, one transaction where a handler used to take two.
func (s *Store) MoveSessions(ctx context.Context, m store.Move) ([]store.Moved, error) {
	var preds []string
	if m.To.Kernel != 0 {
		var err error
		if preds, err = codec.KernelMoves(m.To.Kernel); err != nil {
			return nil, fmt.Errorf("transition sessions: %w", err)
		}
	}
	var moved []store.Moved
	err := s.write(ctx, "transition sessions", func(tx txn) error {
		var err error
		if moved, err = s.transition(ctx, tx, m, preds); err != nil || len(moved) == 0 || m.Note == nil {
			return err
		}
		hist := make([]domain.HistoryEntry, len(moved))
		for i, x := range moved {
			hist[i] = domain.HistoryEntry{Subject: x.ID, At: m.Now, Cause: m.Note.Handler, Result: m.Note.Result,
				From: x.From, To: m.To.Session, Message: m.Note.Message, Attempt: 1}
		}
		return appendHistory(ctx, tx, hist)
	})
	if err != nil {
		return nil, err
	}
	return moved, nil
}

// transition is MoveSessions' move, in tx: it returns the sessions that
// matched the guard, in id order.
func (s *Store) transition(ctx context.Context, tx txn, m store.Move, preds []string) ([]store.Moved, error) {
	var moved []store.Moved
	guard := lockGuardSessions
	if m.To.Session == domain.SessionPending {
		guard = lockGuardRequeue
	}
	args := []any{List(codec.Strings(m.IDs)), List(codec.StatusNames(m.From))}
	if err := tx.query(ctx, guard, args, func(sc codec.Scanner) error {
		g, err := codec.ScanGuarded(sc)
		moved = append(moved, g)
		return err
	}); err != nil || len(moved) == 0 {
		return nil, err
	}
	ids := make([]string, len(moved))
	for i, g := range moved {
		ids[i] = string(g.ID)
	}
	to, now := m.To, m.Now
	if to.Session != 0 {
		if _, err := tx.exec(ctx, moveSessions, codec.StatusName(to.Session), m.Reason, ts(now), List(ids)); err != nil {
			return nil, err
		}
	}
	if to.Kernel != 0 {
		if err := s.moveKernels(ctx, tx, ids, preds, to.Kernel, m.Reason, now); err != nil {
			return nil, err
		}
	}
	if to.Fail {
		if _, err := tx.exec(ctx, markFailed, List(ids)); err != nil {
			return nil, err
		}
	}
	if to.Judge {
		// Under the sessions' locks, which every kernel update takes
		// first, so the kernels ended are the ones the match saw.
		if _, err := tx.exec(ctx, judgeEnded, List(ids)); err != nil {
			return nil, err
		}
	}
	if to.Session.Terminal() {
		if _, err := tx.exec(ctx, setOutcome, List(ids)); err != nil {
			return nil, err
		}
	}
	return moved, nil
}

func (s *Store) moveKernels(ctx context.Context, tx txn, sessions, preds []string,
	to domain.KernelStatus, reason string, now time.Time) error {
	var ids []string
	releases := map[domain.AgentID][]domain.Vec{}
	err := tx.query(ctx, selectMovableKernels, []any{List(sessions), List(preds)}, func(sc codec.Scanner) error {
		var id, status, requested string
		var agent sql.NullString
		if err := sc.Scan(&id, &agent, &status, &requested); err != nil {
			return err
		}
		ids = append(ids, id)
		k, err := planguard.DecodeKernel(s.reg, id, status, requested)
		if err != nil {
			return err
		}
		if k.Status.HoldsResources() && !to.HoldsResources() && agent.Valid {
			releases[domain.AgentID(agent.String)] = append(releases[domain.AgentID(agent.String)], k.Requested)
		}
		return nil
	})
	if err != nil || len(ids) == 0 {
		return err
	}
	if err := tx.execN(ctx, len(ids), moveKernels, codec.StatusName(to), reason, ts(now), List(ids)); err != nil {
		return err
	}
	return s.release(ctx, tx, releases)
}

// release subtracts what kernels held from their agents, locking the
// agents in id order. The callers have just moved those kernels out of a
// holding status under a guard on that status, so each kernel is released
// once.
func (s *Store) release(ctx context.Context, tx txn, releases map[domain.AgentID][]domain.Vec) error {
	if len(releases) == 0 {
		return nil
	}
	ids := make([]string, 0, len(releases))
	for id := range releases {
		ids = append(ids, string(id))
	}
	var agents []*planguard.Agent
	err := tx.query(ctx, lockOccupancy, []any{List(ids)}, func(sc codec.Scanner) error {
		var id, occupied string
		var a planguard.Agent
		if err := sc.Scan(&id, &occupied, &a.KernelCount); err != nil {
			return err
		}
		a.ID = domain.AgentID(id)
		var err error
		if a.Occupied, err = codec.Slots(s.reg, "agents", id, "occupied", occupied); err != nil {
			return err
		}
		for _, req := range releases[a.ID] {
			a.Release(req)
		}
		agents = append(agents, &a)
		return nil
	})
	if err != nil {
		return err
	}
	if len(agents) != len(releases) {
		return fmt.Errorf("%w: a released kernel's agent is missing", codec.ErrInconsistent)
	}
	return s.writeOccupancy(ctx, tx, agents)
}

// UpdateKernel applies one agent event to one kernel, under its session's
// lock.
func (s *Store) UpdateKernel(ctx context.Context, u store.KernelUpdate) (domain.Kernel, error) {
	var out domain.Kernel
	err := s.write(ctx, "update kernel "+string(u.Kernel), func(tx txn) error {
		if err := tx.lock(ctx, lockKernelSession, string(u.Kernel)); err != nil {
			return err
		}
		k, err := codec.ScanKernel(s.reg, tx.queryRow(ctx, selectKernel, string(u.Kernel)))
		if err != nil {
			return err
		}
		if !slices.Contains(u.From, k.Status) {
			return codec.ErrGuard(k.ID, k.Status, u.From)
		}
		if err := codec.KernelUpdate(u, k.Status); err != nil {
			return err
		}
		var exit any
		if u.ExitCode != nil {
			exit = int64(*u.ExitCode)
		}
		if err := tx.execN(ctx, 1, updateKernel, codec.StatusName(u.To), u.Reason, ts(u.Now), exit,
			u.ContainerID, string(k.ID), codec.StatusName(k.Status), codec.JSONPorts(u.ServicePorts)); err != nil {
			return err
		}
		if k.Status.HoldsResources() && !u.To.HoldsResources() && k.Agent != "" {
			if err := s.release(ctx, tx, map[domain.AgentID][]domain.Vec{k.Agent: {k.Requested}}); err != nil {
				return err
			}
		}
		out, err = codec.ScanKernel(s.reg, tx.queryRow(ctx, selectKernel, string(u.Kernel)))
		return err
	})
	if err != nil {
		return domain.Kernel{}, err
	}
	return out, nil
}
