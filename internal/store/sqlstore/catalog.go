package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// PutResourceGroup creates or replaces a group's configuration, keeping its
// round-robin cursor.
func (s *Store) PutResourceGroup(ctx context.Context, g domain.ResourceGroup) error {
	if g.State == domain.GroupRemoved {
		return fmt.Errorf("%w: put resource group %s: REMOVED is reached by RemoveResourceGroup only", store.ErrInvalid, g.Name)
	}
	args, err := codec.GroupArgs(s.reg, g)
	if err != nil {
		return fmt.Errorf("put resource group %s: %w", g.Name, err)
	}
	return s.write(ctx, "put resource group "+g.Name, func(tx txn) error {
		if _, err := tx.exec(ctx, upsertGroup, args...); err != nil {
			return err
		}
		_, err := tx.exec(ctx, bumpGroup, g.Name)
		return err
	})
}

// GetResourceGroup returns a group's configuration.
func (s *Store) GetResourceGroup(ctx context.Context, name string) (domain.ResourceGroup, error) {
	var g domain.ResourceGroup
	err := s.read(ctx, "get resource group "+name, func(tx txn) error {
		var err error
		g, err = codec.ScanGroup(s.reg, tx.queryRow(ctx, selectGroup, name))
		return err
	})
	return g, err
}

// ListResourceGroups returns every group by name.
func (s *Store) ListResourceGroups(ctx context.Context) ([]domain.ResourceGroup, error) {
	return readAll(ctx, s, "list resource groups", selectGroups, nil, func(sc codec.Scanner) (domain.ResourceGroup, error) {
		return codec.ScanGroup(s.reg, sc)
	})
}

// RegisterAgent inserts the agent or re-registers it under a new epoch.
func (s *Store) RegisterAgent(ctx context.Context, a domain.Agent, now time.Time, guard ...store.RegisterGuard) (domain.Agent, error) {
	args, err := codec.AgentArgs(s.reg, a, now, ts)
	if err != nil {
		return domain.Agent{}, fmt.Errorf("register agent %s: %w", a.ID, err)
	}
	var out domain.Agent
	err = s.write(ctx, "register agent "+string(a.ID), func(tx txn) error {
		// The group it leaves, when it moves, loses capacity too. The row
		// is locked so that a guard's epoch stays true until the upsert.
		var before string
		var epoch int64
		err := tx.batch(ctx, Stmt{SQL: lockAgentForRegister, Args: []any{string(a.ID)}, Row: func(sc codec.Scanner) error {
			return sc.Scan(&before, &epoch)
		}})
		if err != nil {
			return err
		}
		for _, g := range guard {
			if g.Epoch != epoch {
				return fmt.Errorf("%w: agent %s is at epoch %d, the registration expected %d",
					store.ErrGuardFailed, a.ID, epoch, g.Epoch)
			}
		}
		if out, err = codec.ScanAgent(s.reg, tx.queryRow(ctx, registerAgent, args...)); err != nil {
			return err
		}
		bump := []string{out.ResourceGroup}
		if before != "" && before != out.ResourceGroup {
			bump = append(bump, before)
		}
		for _, g := range bump {
			if _, err := tx.exec(ctx, bumpGroup, g); err != nil {
				return err
			}
		}
		// Checked once the bump holds the group's row, so a removal
		// either counted this agent or committed before this read.
		return s.checkGroupTakesAgents(ctx, tx, out.ResourceGroup)
	})
	return out, err
}

// Heartbeat records the time of the agent's latest sign of life. The
// update is guarded by the epoch; only when it misses does a second
// statement find out why.
func (s *Store) Heartbeat(ctx context.Context, id domain.AgentID, epoch int64, now time.Time) error {
	return s.write(ctx, "heartbeat of agent "+string(id), func(tx txn) error {
		n, err := tx.exec(ctx, heartbeatAgent, ts(now), string(id), epoch)
		if err != nil || n == 1 {
			return err
		}
		var current int64
		var status string
		if err := tx.queryRow(ctx, selectAgentEpochStatus, string(id)).Scan(&current, &status); err != nil {
			return err
		}
		if current == epoch {
			return fmt.Errorf("%w: agent is %s, so it must register again", store.ErrGuardFailed, status)
		}
		return fmt.Errorf("%w: agent is at epoch %d, heartbeat is from epoch %d", store.ErrGuardFailed, current, epoch)
	})
}

// SetAgentCapacity replaces the capacity of the agent's current
// incarnation when it differs. The update is guarded by the epoch and by
// the capacity itself, so an unchanged one costs no write; only when it
// misses does a second statement find out why.
func (s *Store) SetAgentCapacity(ctx context.Context, id domain.AgentID, epoch int64, capacity domain.Vec) (bool, error) {
	enc, err := codec.EncodeSlots(s.reg, capacity)
	if err != nil {
		return false, fmt.Errorf("set capacity of agent %s: %w: %w", id, store.ErrInvalid, err)
	}
	changed := false
	err = s.write(ctx, "set capacity of agent "+string(id), func(tx txn) error {
		n, err := tx.exec(ctx, setAgentCapacity, enc, string(id), epoch)
		if err != nil {
			return err
		}
		if n == 1 {
			// More room may fit a waiting session: the idle-round skip
			// must see it, as it sees a cordon.
			changed = true
			_, err := tx.exec(ctx, bumpGroupOfAgent, string(id))
			return err
		}
		var current int64
		if err := tx.queryRow(ctx, selectAgentEpoch, string(id)).Scan(&current); err != nil {
			return err
		}
		if current != epoch {
			return fmt.Errorf("%w: agent is at epoch %d, capacity is from epoch %d", store.ErrGuardFailed, current, epoch)
		}
		return nil
	})
	return changed, err
}

// NoteWaitingKernels records, as their status reason, why the agent's
// CREATING kernels wait to start; each row is written only when its note
// changed. Kernels in another status or on another agent are left alone.
func (s *Store) NoteWaitingKernels(ctx context.Context, agent domain.AgentID, notes map[domain.KernelID]string) (int, error) {
	ids := make([]domain.KernelID, 0, len(notes))
	for id := range notes {
		ids = append(ids, id)
	}
	// A fixed order keeps two managers' writes from deadlocking.
	slices.Sort(ids)
	keys, reasons := make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		keys[i], reasons[i] = string(id), notes[id]
	}
	var changed int64
	// One statement over the batch: a SLURM agent may report hundreds of
	// queued jobs each heartbeat.
	err := s.write(ctx, "note waiting kernels of agent "+string(agent), func(tx txn) error {
		var err error
		changed, err = tx.exec(ctx, noteWaitingKernels, string(agent), Rows{keys, reasons})
		return err
	})
	return int(changed), err
}

// SetAgentStatus records the agent's liveness.
func (s *Store) SetAgentStatus(ctx context.Context, id domain.AgentID, status domain.AgentStatus) error {
	return s.write(ctx, "set status of agent "+string(id), func(tx txn) error {
		if err := tx.execOne(ctx, setAgentStatus, codec.StatusName(status), string(id)); err != nil {
			return err
		}
		_, err := tx.exec(ctx, bumpGroupOfAgent, string(id))
		return err
	})
}

// SetAgentSchedulable cordons (false) or uncordons (true) the agent;
// uncordoning also ends a drain.
func (s *Store) SetAgentSchedulable(ctx context.Context, id domain.AgentID, schedulable bool) error {
	return s.write(ctx, "set schedulable of agent "+string(id), func(tx txn) error {
		if err := tx.execOne(ctx, setAgentSchedulable, schedulable, string(id)); err != nil {
			return err
		}
		if schedulable { // uncordoning ends a drain
			if _, err := tx.exec(ctx, deleteDrain, string(id)); err != nil {
				return err
			}
		}
		_, err := tx.exec(ctx, bumpGroupOfAgent, string(id))
		return err
	})
}

// RetireAgent implements store.Store.
func (s *Store) RetireAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error) {
	var out domain.Agent
	err := s.write(ctx, "retire agent "+string(id), func(tx txn) error {
		// The row lock orders this against RegisterAgent, which takes
		// the same lock first: the status read here is the one replaced.
		var status string
		found := false
		err := tx.query(ctx, lockAgentForRetire, []any{string(id)}, func(sc codec.Scanner) error {
			found = true
			return sc.Scan(&status)
		})
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("agent %s: %w", id, store.ErrNotFound)
		}
		st, err := domain.ParseAgentStatus(status)
		if err != nil {
			return &store.CorruptRowError{Table: "agents", ID: string(id), Column: "status", Err: err}
		}
		if st != domain.AgentLost {
			return &store.AgentRetireError{Agent: id, Status: st}
		}
		// No placement reaches a LOST agent, so the count cannot grow
		// before the commit; it shrinks only as the sweep gives kernels up.
		var held int64
		if err := tx.queryRow(ctx, countAgentHoldingKernels, string(id)).Scan(&held); err != nil {
			return err
		}
		if held > 0 {
			return &store.AgentRetireError{Agent: id, Status: st, Kernels: int(held)}
		}
		// A retired agent that comes back registers as a fresh one:
		// schedulable and without the drain of the incarnation it was.
		if _, err := tx.exec(ctx, retireAgent, string(id), true); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, deleteDrain, string(id)); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, bumpGroupOfAgent, string(id)); err != nil {
			return err
		}
		out, err = codec.ScanAgent(s.reg, tx.queryRow(ctx, selectAgent, string(id)))
		return err
	})
	return out, err
}

// GetAgent returns one agent.
func (s *Store) GetAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error) {
	var a domain.Agent
	err := s.read(ctx, "get agent "+string(id), func(tx txn) error {
		var err error
		a, err = codec.ScanAgent(s.reg, tx.queryRow(ctx, selectAgent, string(id)))
		return err
	})
	return a, err
}

// ListAgents returns the agents the filter selects, by id.
func (s *Store) ListAgents(ctx context.Context, f store.AgentFilter) ([]domain.Agent, error) {
	args := []any{f.Group, List(codec.StatusNames(f.Statuses)), List(codec.Strings(f.IDs))}
	query := selectAgents
	if !f.SilentSince.IsZero() {
		query, args = selectSilentAgents, append(args, ts(f.SilentSince))
	}
	return readAll(ctx, s, "list agents", query, args, s.agents.Scan)
}

// CreateUser stores the user and the hash of its token.
func (s *Store) CreateUser(ctx context.Context, u store.User, tokenHash []byte) error {
	return s.write(ctx, "create user "+u.Name, func(tx txn) error {
		return tx.batch(ctx,
			Stmt{SQL: insertUser, Args: codec.UserArgs(u, ts)},
			Stmt{SQL: insertToken, Args: []any{tokenHash, u.ID, ts(u.CreatedAt), nil}})
	})
}

// ReplaceTokens implements store.Users.
func (s *Store) ReplaceTokens(ctx context.Context, userID string, tokenHash []byte, at, expires time.Time) error {
	return s.write(ctx, "replace tokens of "+userID, func(tx txn) error {
		// The user's row, locked: a missing user is ErrNotFound, and
		// two replacements of one user's tokens take turns.
		if err := tx.execOne(ctx, lockUser, userID); err != nil {
			return err
		}
		return tx.batch(ctx, Stmt{SQL: deleteTokens, Args: []any{userID}},
			Stmt{SQL: insertToken, Args: []any{tokenHash, userID, ts(at), ts(expires)}})
	})
}

// ListUsers returns every user by name.
func (s *Store) ListUsers(ctx context.Context) ([]store.User, error) {
	return readAll(ctx, s, "list users", selectUsers, nil, codec.ScanUser)
}

// UserByTokenHash finds the user a token belongs to.
func (s *Store) UserByTokenHash(ctx context.Context, tokenHash []byte) (store.User, error) {
	var u store.User
	err := s.read(ctx, "user by token", func(tx txn) error {
		var err error
		u, err = codec.ScanTokenUser(tx.queryRow(ctx, selectByToken, tokenHash))
		return err
	})
	return u, err
}

// PutPolicy creates or replaces a policy.
func (s *Store) PutPolicy(ctx context.Context, p domain.Policy) error {
	args, err := codec.PolicyArgs(s.reg, p)
	if err != nil {
		return fmt.Errorf("put policy %s:%s: %w", p.Scope, p.Name, err)
	}
	return s.write(ctx, fmt.Sprintf("put policy %s:%s", p.Scope, p.Name), func(tx txn) error {
		if _, err := tx.exec(ctx, upsertPolicy, args...); err != nil {
			return err
		}
		// Policies are per owner, not per group: any group may hold the
		// owner's sessions.
		_, err := tx.exec(ctx, bumpAllGroups)
		return err
	})
}

// GetPolicy returns the policy of one user, project or domain.
func (s *Store) GetPolicy(ctx context.Context, scope domain.PolicyScope, name string) (domain.Policy, error) {
	var p domain.Policy
	err := s.read(ctx, fmt.Sprintf("get policy %s:%s", scope, name), func(tx txn) error {
		var err error
		p, err = codec.ScanPolicy(s.reg, tx.queryRow(ctx, selectPolicy, string(scope), name))
		return err
	})
	return p, err
}

// GroupGenerations returns each resource group's generation (see
// bumpGroup). It is one small read, so a manager can afford it every
// cycle.
func (s *Store) GroupGenerations(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.read(ctx, "read group generations", func(tx txn) error {
		return tx.batch(ctx, Stmt{SQL: selectGenerations, Row: func(sc codec.Scanner) error {
			var name string
			var gen int64
			err := sc.Scan(&name, &gen)
			out[name] = gen
			return err
		}})
	})
	return out, err
}
