package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// LoadSnapshot reads one group's scheduling input in one read transaction:
// nine small queries, whatever the number of sessions.
func (s *Store) LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error) {
	snap := framework.Snapshot{Now: now, Slots: s.reg}
	err := s.read(ctx, "load snapshot of group "+group, func(tx *sql.Tx) error {
		var err error
		if snap.Group, err = codec.ScanGroup(s.reg, tx.QueryRowContext(ctx, selectGroup, group)); err != nil {
			return err
		}
		var cursor string
		if err := tx.QueryRowContext(ctx, selectGroupCursor, group).Scan(&cursor); err != nil {
			return err
		}
		snap.Cursor = domain.AgentID(cursor)
		if err := collect(ctx, tx, selectGroupAgents, []any{group}, func(sc codec.Scanner) error {
			a, err := codec.ScanAgent(s.reg, sc)
			snap.Agents = append(snap.Agents, a)
			return err
		}); err != nil {
			return err
		}
		if err := collect(ctx, tx, selectPendingOfGroup, []any{group}, func(sc codec.Scanner) error {
			sess, err := codec.ScanSession(s.reg, sc)
			snap.Pending = append(snap.Pending, framework.PendingSession{Session: sess})
			return err
		}); err != nil {
			return err
		}
		var kernels []domain.Kernel
		if err := collect(ctx, tx, selectPendingKernels, []any{group}, func(sc codec.Scanner) error {
			k, err := codec.ScanKernel(s.reg, sc)
			kernels = append(kernels, k)
			return err
		}); err != nil {
			return err
		}
		codec.GroupKernels(snap.Pending, kernels)
		var edges []codec.DependencyRow
		if err := collect(ctx, tx, selectPendingDependencies, []any{group}, func(sc codec.Scanner) error {
			var d codec.DependencyRow
			err := sc.Scan(&d.Session, &d.DependsOn, &d.Status, &d.Outcome)
			edges = append(edges, d)
			return err
		}); err != nil {
			return err
		}
		if snap.Dependencies, err = codec.AttachDependencies(snap.Pending, edges); err != nil {
			return err
		}
		var slots []codec.UsageSlotRow
		if err := collect(ctx, tx, selectUsageSlots, []any{group}, func(sc codec.Scanner) error {
			var r codec.UsageSlotRow
			err := sc.Scan(&r.User, &r.Project, &r.Domain, &r.InGroup, &r.Slot, &r.Sum)
			slots = append(slots, r)
			return err
		}); err != nil {
			return err
		}
		var counts []codec.UsageCountRow
		if err := collect(ctx, tx, selectUsageCounts, nil, func(sc codec.Scanner) error {
			var r codec.UsageCountRow
			err := sc.Scan(&r.User, &r.Project, &r.Domain, &r.Count)
			counts = append(counts, r)
			return err
		}); err != nil {
			return err
		}
		if snap.Usage, err = codec.BuildUsage(s.reg, slots, counts); err != nil {
			return err
		}
		var policies []domain.Policy
		if err := collect(ctx, tx, selectPendingPolicies, []any{group}, func(sc codec.Scanner) error {
			p, err := codec.ScanPolicy(s.reg, sc)
			policies = append(policies, p)
			return err
		}); err != nil {
			return err
		}
		snap.Policies = codec.BuildPolicies(policies)
		return nil
	})
	if err != nil {
		return framework.Snapshot{}, err
	}
	return snap, nil
}
