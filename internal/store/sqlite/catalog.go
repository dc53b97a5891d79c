package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// PutResourceGroup creates or replaces a group's configuration, keeping its
// round-robin cursor.
func (s *Store) PutResourceGroup(ctx context.Context, g domain.ResourceGroup) error {
	args, err := codec.GroupArgs(s.reg, g)
	if err != nil {
		return fmt.Errorf("put resource group %s: %w", g.Name, err)
	}
	return s.write(ctx, "put resource group "+g.Name, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, upsertGroup, args...)
		return err
	})
}

// GetResourceGroup returns a group's configuration.
func (s *Store) GetResourceGroup(ctx context.Context, name string) (domain.ResourceGroup, error) {
	var g domain.ResourceGroup
	err := s.read(ctx, "get resource group "+name, func(tx *sql.Tx) error {
		var err error
		g, err = codec.ScanGroup(s.reg, tx.QueryRowContext(ctx, selectGroup, name))
		return err
	})
	return g, err
}

// ListResourceGroups returns every group by name.
func (s *Store) ListResourceGroups(ctx context.Context) ([]domain.ResourceGroup, error) {
	var out []domain.ResourceGroup
	err := s.read(ctx, "list resource groups", func(tx *sql.Tx) error {
		return collect(ctx, tx, selectGroups, nil, func(sc codec.Scanner) error {
			g, err := codec.ScanGroup(s.reg, sc)
			out = append(out, g)
			return err
		})
	})
	return out, err
}

// RegisterAgent inserts the agent or re-registers it under a new epoch.
func (s *Store) RegisterAgent(ctx context.Context, a domain.Agent, now time.Time) (domain.Agent, error) {
	var out domain.Agent
	err := s.write(ctx, "register agent "+string(a.ID), func(tx *sql.Tx) error {
		args, err := codec.AgentArgs(s.reg, a, now, ts)
		if err != nil {
			return err
		}
		out, err = codec.ScanAgent(s.reg, tx.QueryRowContext(ctx, registerAgent, args...))
		return err
	})
	return out, err
}

// Heartbeat records the time of the agent's latest sign of life.
func (s *Store) Heartbeat(ctx context.Context, id domain.AgentID, epoch int64, now time.Time) error {
	return s.write(ctx, "heartbeat of agent "+string(id), func(tx *sql.Tx) error {
		var current int64
		if err := tx.QueryRowContext(ctx, selectAgentEpoch, string(id)).Scan(&current); err != nil {
			return err
		}
		if current != epoch {
			return fmt.Errorf("%w: agent is at epoch %d, heartbeat is from epoch %d", store.ErrGuardFailed, current, epoch)
		}
		_, err := tx.ExecContext(ctx, heartbeatAgent, ts(now), string(id), epoch)
		return err
	})
}

// SetAgentStatus records the agent's liveness.
func (s *Store) SetAgentStatus(ctx context.Context, id domain.AgentID, status domain.AgentStatus) error {
	return s.write(ctx, "set status of agent "+string(id), func(tx *sql.Tx) error {
		return execOne(ctx, tx, setAgentStatus, codec.StatusName(status), string(id))
	})
}

// SetAgentSchedulable cordons (false) or uncordons (true) the agent.
func (s *Store) SetAgentSchedulable(ctx context.Context, id domain.AgentID, schedulable bool) error {
	return s.write(ctx, "set schedulable of agent "+string(id), func(tx *sql.Tx) error {
		return execOne(ctx, tx, setAgentSchedulable, schedulable, string(id))
	})
}

// GetAgent returns one agent.
func (s *Store) GetAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error) {
	var a domain.Agent
	err := s.read(ctx, "get agent "+string(id), func(tx *sql.Tx) error {
		var err error
		a, err = codec.ScanAgent(s.reg, tx.QueryRowContext(ctx, selectAgent, string(id)))
		return err
	})
	return a, err
}

// ListAgents returns the agents the filter selects, by id.
func (s *Store) ListAgents(ctx context.Context, f store.AgentFilter) ([]domain.Agent, error) {
	var out []domain.Agent
	err := s.read(ctx, "list agents", func(tx *sql.Tx) error {
		args := []any{f.Group, jsonList(codec.StatusNames(f.Statuses)), jsonList(codec.Strings(f.IDs))}
		return collect(ctx, tx, selectAgents, args, func(sc codec.Scanner) error {
			a, err := codec.ScanAgent(s.reg, sc)
			out = append(out, a)
			return err
		})
	})
	return out, err
}

// CreateUser stores the user and the hash of its token.
func (s *Store) CreateUser(ctx context.Context, u store.User, tokenHash []byte) error {
	return s.write(ctx, "create user "+u.Name, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, insertUser, codec.UserArgs(u, ts)...); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, insertToken, tokenHash, u.ID, ts(u.CreatedAt))
		return err
	})
}

// UserByTokenHash finds the user a token belongs to.
func (s *Store) UserByTokenHash(ctx context.Context, tokenHash []byte) (store.User, error) {
	var u store.User
	err := s.read(ctx, "user by token", func(tx *sql.Tx) error {
		var err error
		u, err = codec.ScanUser(tx.QueryRowContext(ctx, selectByToken, tokenHash))
		return err
	})
	return u, err
}

// PutPolicy creates or replaces a policy.
func (s *Store) PutPolicy(ctx context.Context, p domain.Policy) error {
	return s.write(ctx, fmt.Sprintf("put policy %s:%s", p.Scope, p.Name), func(tx *sql.Tx) error {
		args, err := codec.PolicyArgs(s.reg, p)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, upsertPolicy, args...)
		return err
	})
}

// GetPolicy returns the policy of one user, project or domain.
func (s *Store) GetPolicy(ctx context.Context, scope domain.PolicyScope, name string) (domain.Policy, error) {
	var p domain.Policy
	err := s.read(ctx, fmt.Sprintf("get policy %s:%s", scope, name), func(tx *sql.Tx) error {
		var err error
		p, err = codec.ScanPolicy(s.reg, tx.QueryRowContext(ctx, selectPolicy, string(scope), name))
		return err
	})
	return p, err
}

// collect runs a query and hands each row to fn, stopping at the first
// error.
func collect(ctx context.Context, tx *sql.Tx, query string, args []any, fn func(codec.Scanner) error) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// execOne runs a statement that must change exactly one row; none means
// the row does not exist.
func execOne(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}
