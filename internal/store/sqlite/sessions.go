package sqlite

import (
	"context"
	"database/sql"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// CreateSession stores a new PENDING session with its kernels and
// dependencies, all or nothing.
func (s *Store) CreateSession(ctx context.Context, sess domain.Session, kernels []domain.Kernel) error {
	kernels, err := codec.NewSession(sess, kernels)
	if err != nil {
		return err
	}
	return s.write(ctx, "create session "+string(sess.ID), func(tx *sql.Tx) error {
		args, err := codec.SessionArgs(s.reg, sess, ts)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertSession, args...); err != nil {
			return err
		}
		for _, k := range kernels {
			args, err := codec.KernelArgs(s.reg, k, sess.CreatedAt, ts)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, insertKernel, args...); err != nil {
				return err
			}
		}
		for _, d := range sess.DependsOn {
			if _, err := tx.ExecContext(ctx, insertDependency, string(sess.ID), string(d)); err != nil {
				return err
			}
		}
		return nil
	})
}

// GetSession returns a session with its kernels in cluster index order.
func (s *Store) GetSession(ctx context.Context, id domain.SessionID) (store.SessionWithKernels, error) {
	var out store.SessionWithKernels
	err := s.read(ctx, "get session "+string(id), func(tx *sql.Tx) error {
		var err error
		out.Session, err = codec.ScanSession(s.reg, tx.QueryRowContext(ctx, selectSession, string(id)))
		if err != nil {
			return err
		}
		deps, err := s.dependencies(ctx, tx, []string{string(id)})
		if err != nil {
			return err
		}
		out.Session.DependsOn = deps[id]
		return collect(ctx, tx, selectSessionKernels, []any{string(id)}, func(sc codec.Scanner) error {
			k, err := codec.ScanKernel(s.reg, sc)
			out.Kernels = append(out.Kernels, k)
			return err
		})
	})
	return out, err
}

// ListSessions returns the sessions the filter selects, oldest first.
func (s *Store) ListSessions(ctx context.Context, f store.SessionFilter) ([]domain.Session, error) {
	var out []domain.Session
	err := s.read(ctx, "list sessions", func(tx *sql.Tx) error {
		limit := f.Limit
		if limit <= 0 {
			limit = -1 // SQLite: no limit
		}
		args := []any{jsonList(codec.StatusNames(f.Statuses)), f.User, f.Project, f.Domain, f.Group, limit,
			jsonList(codec.Strings(f.IDs))}
		ids := []string{}
		err := collect(ctx, tx, selectSessions, args, func(sc codec.Scanner) error {
			sess, err := codec.ScanSession(s.reg, sc)
			out = append(out, sess)
			ids = append(ids, string(sess.ID))
			return err
		})
		if err != nil {
			return err
		}
		deps, err := s.dependencies(ctx, tx, ids)
		if err != nil {
			return err
		}
		for i := range out {
			out[i].DependsOn = deps[out[i].ID]
		}
		return nil
	})
	return out, err
}

func (s *Store) dependencies(ctx context.Context, tx *sql.Tx, ids []string) (map[domain.SessionID][]domain.SessionID, error) {
	deps := make(map[domain.SessionID][]domain.SessionID)
	err := collect(ctx, tx, selectDependencies, []any{jsonList(ids)}, func(sc codec.Scanner) error {
		var from, to string
		if err := sc.Scan(&from, &to); err != nil {
			return err
		}
		deps[domain.SessionID(from)] = append(deps[domain.SessionID(from)], domain.SessionID(to))
		return nil
	})
	return deps, err
}

// ListKernels returns the kernels the filter selects.
func (s *Store) ListKernels(ctx context.Context, f store.KernelFilter) ([]domain.Kernel, error) {
	var out []domain.Kernel
	err := s.read(ctx, "list kernels", func(tx *sql.Tx) error {
		args := []any{jsonList(codec.Strings(f.Sessions)), jsonList(codec.Strings(f.Agents)),
			jsonList(codec.StatusNames(f.Statuses)), jsonList(codec.Strings(f.IDs))}
		return collect(ctx, tx, selectKernels, args, func(sc codec.Scanner) error {
			k, err := codec.ScanKernel(s.reg, sc)
			out = append(out, k)
			return err
		})
	})
	return out, err
}

// AvoidAgents adds agents to the session's avoid list.
func (s *Store) AvoidAgents(ctx context.Context, id domain.SessionID, agents []domain.AgentID) error {
	return s.write(ctx, "avoid agents for session "+string(id), func(tx *sql.Tx) error {
		var stored string
		if err := tx.QueryRowContext(ctx, selectAvoidAgents, string(id)).Scan(&stored); err != nil {
			return err
		}
		list, changed, err := codec.AddAvoided("sessions", string(id), stored, agents)
		if err != nil || !changed {
			return err
		}
		_, err = tx.ExecContext(ctx, updateAvoidAgents, list, string(id))
		return err
	})
}
