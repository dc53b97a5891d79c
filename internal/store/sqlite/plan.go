package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
	"github.com/sokovan-go/sokovan/internal/store/internal/planguard"
)

// ApplyPlan re-checks every placement against the rows as they are now and
// writes the ones that still hold, in one transaction. The write lock is
// held from the first statement, so nothing changes between check and
// write.
func (s *Store) ApplyPlan(ctx context.Context, plan framework.Plan, now time.Time) (store.ApplyResult, error) {
	var res store.ApplyResult
	err := s.write(ctx, "apply plan of group "+plan.Group, func(tx *sql.Tx) error {
		var cursor string
		if err := tx.QueryRowContext(ctx, selectGroupCursor, plan.Group).Scan(&cursor); err != nil {
			return err
		}
		sessions, agents, err := s.readPlanRows(ctx, tx, plan)
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
		if _, err := tx.ExecContext(ctx, saveGroupCursor, string(plan.Cursor), plan.Group); err != nil {
			return err
		}
		if err := s.hook(store.FaultCommit); err != nil {
			return err
		}
		res = store.ApplyResult{Applied: out.Applied, Rejected: out.Rejected}
		return nil
	})
	if err != nil {
		return store.ApplyResult{}, err
	}
	return res, nil
}

func (s *Store) readPlanRows(ctx context.Context, tx *sql.Tx, plan framework.Plan) (
	map[domain.SessionID]*planguard.Session, map[domain.AgentID]*planguard.Agent, error) {
	sessionIDs, agentIDs := planguard.IDs(plan)
	sessions := make(map[domain.SessionID]*planguard.Session, len(sessionIDs))
	err := collect(ctx, tx, selectPlanSessions, []any{jsonList(sessionIDs)}, func(sc codec.Scanner) error {
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
	})
	if err != nil {
		return nil, nil, err
	}
	err = collect(ctx, tx, selectPlanKernels, []any{jsonList(sessionIDs)}, func(sc codec.Scanner) error {
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
	})
	if err != nil {
		return nil, nil, err
	}
	agents := make(map[domain.AgentID]*planguard.Agent, len(agentIDs))
	err = collect(ctx, tx, selectPlanAgents, []any{jsonList(agentIDs)}, func(sc codec.Scanner) error {
		var a planguard.Agent
		var id, status, capacity, occupied string
		if err := sc.Scan(&id, &a.Group, &status, &a.Schedulable, &capacity, &occupied, &a.KernelCount, &a.MaxKernels); err != nil {
			return err
		}
		a.ID = domain.AgentID(id)
		if err := planguard.DecodeAgent(s.reg, &a, status, capacity, occupied); err != nil {
			return err
		}
		agents[a.ID] = &a
		return nil
	})
	return sessions, agents, err
}

func (s *Store) writePlan(ctx context.Context, tx *sql.Tx, out planguard.Result,
	agents map[domain.AgentID]*planguard.Agent, now time.Time) error {
	if len(out.Applied) == 0 {
		return nil
	}
	if err := execN(ctx, tx, len(out.Applied), scheduleSessions, ts(now), jsonList(codec.Strings(out.Applied))); err != nil {
		return err
	}
	if err := s.hook(store.FaultSessions); err != nil {
		return err
	}
	pairs := make([][2]string, len(out.Kernels))
	for i, k := range out.Kernels {
		pairs[i] = [2]string{string(k.Kernel), string(k.Agent)}
	}
	if err := execN(ctx, tx, len(pairs), scheduleKernels, ts(now), mustJSON(pairs)); err != nil {
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

// TransitionSessions moves the sessions that are in one of from, and their
// kernels, releasing what the kernels stop holding.
func (s *Store) TransitionSessions(ctx context.Context, ids []domain.SessionID, from []domain.SessionStatus,
	to domain.Transition, reason string, now time.Time) ([]domain.SessionID, error) {
	var preds []string
	if to.Kernel != 0 {
		var err error
		if preds, err = codec.KernelMoves(to.Kernel); err != nil {
			return nil, fmt.Errorf("transition sessions: %w", err)
		}
	}
	var changed []domain.SessionID
	err := s.write(ctx, "transition sessions", func(tx *sql.Tx) error {
		changed = nil
		args := []any{jsonList(codec.Strings(ids)), jsonList(codec.StatusNames(from))}
		guard := guardSessions
		if to.Session == domain.SessionPending {
			guard = guardRequeue
		}
		if err := collect(ctx, tx, guard, args, func(sc codec.Scanner) error {
			var id string
			err := sc.Scan(&id)
			changed = append(changed, domain.SessionID(id))
			return err
		}); err != nil || len(changed) == 0 {
			return err
		}
		moved := jsonList(codec.Strings(changed))
		if to.Session != 0 {
			if _, err := tx.ExecContext(ctx, moveSessions, codec.StatusName(to.Session), reason, ts(now), moved); err != nil {
				return err
			}
		}
		if to.Kernel != 0 {
			if err := s.moveKernels(ctx, tx, moved, preds, to.Kernel, reason, now); err != nil {
				return err
			}
		}
		if to.Session.Terminal() {
			if _, err := tx.ExecContext(ctx, setOutcome, moved); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

func (s *Store) moveKernels(ctx context.Context, tx *sql.Tx, sessions string, preds []string,
	to domain.KernelStatus, reason string, now time.Time) error {
	var ids []string
	releases := map[domain.AgentID][]domain.Vec{}
	err := collect(ctx, tx, selectMovableKernels, []any{sessions, jsonList(preds)}, func(sc codec.Scanner) error {
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
	if err := execN(ctx, tx, len(ids), moveKernels, codec.StatusName(to), reason, ts(now), jsonList(ids)); err != nil {
		return err
	}
	return s.release(ctx, tx, releases)
}

// release subtracts what kernels held from their agents. The callers have
// just moved those kernels out of a holding status under a guard on that
// status, so each kernel is released once.
func (s *Store) release(ctx context.Context, tx *sql.Tx, releases map[domain.AgentID][]domain.Vec) error {
	if len(releases) == 0 {
		return nil
	}
	ids := make([]string, 0, len(releases))
	for id := range releases {
		ids = append(ids, string(id))
	}
	var agents []*planguard.Agent
	err := collect(ctx, tx, selectOccupancy, []any{jsonList(ids)}, func(sc codec.Scanner) error {
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

func (s *Store) writeOccupancy(ctx context.Context, tx *sql.Tx, agents []*planguard.Agent) error {
	if len(agents) == 0 {
		return nil
	}
	rows := make([][3]any, len(agents))
	for i, a := range agents {
		occ, err := codec.EncodeSlots(s.reg, a.Occupied)
		if err != nil {
			return fmt.Errorf("agent %s: %w: %v", a.ID, codec.ErrInconsistent, err)
		}
		rows[i] = [3]any{string(a.ID), occ, a.KernelCount}
	}
	return execN(ctx, tx, len(rows), writeOccupancy, mustJSON(rows))
}

// UpdateKernel applies one agent event to one kernel.
func (s *Store) UpdateKernel(ctx context.Context, u store.KernelUpdate) (domain.Kernel, error) {
	var out domain.Kernel
	err := s.write(ctx, "update kernel "+string(u.Kernel), func(tx *sql.Tx) error {
		k, err := codec.ScanKernel(s.reg, tx.QueryRowContext(ctx, selectKernel, string(u.Kernel)))
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
		if err := execN(ctx, tx, 1, updateKernel, codec.StatusName(u.To), u.Reason, ts(u.Now), exit,
			u.ContainerID, string(k.ID), codec.StatusName(k.Status)); err != nil {
			return err
		}
		if k.Status.HoldsResources() && !u.To.HoldsResources() && k.Agent != "" {
			if err := s.release(ctx, tx, map[domain.AgentID][]domain.Vec{k.Agent: {k.Requested}}); err != nil {
				return err
			}
		}
		out, err = codec.ScanKernel(s.reg, tx.QueryRowContext(ctx, selectKernel, string(u.Kernel)))
		return err
	})
	if err != nil {
		return domain.Kernel{}, err
	}
	return out, nil
}

// execN runs a statement that must change exactly n rows: the rows were
// checked under the write lock, so any other count is a bug.
func execN(ctx context.Context, tx *sql.Tx, n int, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	got, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if got != int64(n) {
		return fmt.Errorf("%w: changed %d rows, expected %d", codec.ErrInconsistent, got, n)
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with slices of strings and ints
	}
	return string(b)
}
