package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// CreateSession stores a new PENDING session with its kernels and
// dependencies, all or nothing, in one round trip.
func (s *Store) CreateSession(ctx context.Context, sess domain.Session, kernels []domain.Kernel) error {
	kernels, err := codec.NewSession(sess, kernels)
	if err != nil {
		return err
	}
	sessionArgs, err := codec.SessionArgs(s.reg, sess, ts)
	if err != nil {
		return err
	}
	kernelArgs := make([][]any, len(kernels))
	for i, k := range kernels {
		if kernelArgs[i], err = codec.KernelArgs(s.reg, k, sess.CreatedAt, ts); err != nil {
			return err
		}
	}
	return s.write(ctx, "create session "+string(sess.ID), func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(insertSession, sessionArgs...)
		for _, args := range kernelArgs {
			b.Queue(insertKernel, args...)
		}
		for _, d := range sess.DependsOn {
			b.Queue(insertDependency, string(sess.ID), string(d))
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// GetSession returns a session with its kernels in cluster index order.
func (s *Store) GetSession(ctx context.Context, id domain.SessionID) (store.SessionWithKernels, error) {
	var out store.SessionWithKernels
	err := s.read(ctx, "get session "+string(id), func(tx pgx.Tx) error {
		var err error
		out.Session, err = codec.ScanSession(s.reg, tx.QueryRow(ctx, selectSession, string(id)))
		if err != nil {
			return err
		}
		deps, err := dependencies(ctx, tx, []string{string(id)})
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
	err := s.read(ctx, "list sessions", func(tx pgx.Tx) error {
		var limit any // NULL: no limit
		if f.Limit > 0 {
			limit = f.Limit
		}
		args := []any{codec.StatusNames(f.Statuses), f.User, f.Project, f.Domain, f.Group, limit, codec.Strings(f.IDs)}
		var ids []string
		err := collect(ctx, tx, selectSessions, args, func(sc codec.Scanner) error {
			sess, err := codec.ScanSession(s.reg, sc)
			out = append(out, sess)
			ids = append(ids, string(sess.ID))
			return err
		})
		if err != nil {
			return err
		}
		deps, err := dependencies(ctx, tx, ids)
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

func dependencies(ctx context.Context, tx pgx.Tx, ids []string) (map[domain.SessionID][]domain.SessionID, error) {
	deps := make(map[domain.SessionID][]domain.SessionID)
	err := collect(ctx, tx, selectDependencies, []any{ids}, func(sc codec.Scanner) error {
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
	err := s.read(ctx, "list kernels", func(tx pgx.Tx) error {
		args := []any{codec.Strings(f.Sessions), codec.Strings(f.Agents), codec.StatusNames(f.Statuses), codec.Strings(f.IDs)}
		return collect(ctx, tx, selectKernels, args, func(sc codec.Scanner) error {
			k, err := codec.ScanKernel(s.reg, sc)
			out = append(out, k)
			return err
		})
	})
	return out, err
}

// AvoidAgents adds agents to the session's avoid list, under the session's
// lock so concurrent additions are all kept.
func (s *Store) AvoidAgents(ctx context.Context, id domain.SessionID, agents []domain.AgentID) error {
	return s.write(ctx, "avoid agents for session "+string(id), func(tx pgx.Tx) error {
		var stored string
		if err := tx.QueryRow(ctx, lockAvoidAgents, string(id)).Scan(&stored); err != nil {
			return err
		}
		list, changed, err := codec.AddAvoided("sessions", string(id), stored, agents)
		if err != nil || !changed {
			return err
		}
		_, err = tx.Exec(ctx, updateAvoidAgents, list, string(id))
		return err
	})
}
