package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// LoadSnapshot reads one group's scheduling input from one snapshot of the
// database: nine queries sent as a single batch, one round trip whatever
// the number of sessions.
func (s *Store) LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error) {
	snap := framework.Snapshot{Now: now, Slots: s.reg}
	err := s.read(ctx, "load snapshot of group "+group, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, q := range []string{selectGroup, selectGroupCursor, selectGroupAgents, selectPendingOfGroup,
			selectPendingKernels, selectPendingDependencies, selectUsageSlots} {
			b.Queue(q, group)
		}
		b.Queue(selectUsageCounts)
		b.Queue(selectPendingPolicies, group)
		br := tx.SendBatch(ctx, b)
		defer br.Close()

		var err error
		if snap.Group, err = codec.ScanGroup(s.reg, br.QueryRow()); err != nil {
			return err
		}
		var cursor string
		if err := br.QueryRow().Scan(&cursor); err != nil {
			return err
		}
		snap.Cursor = domain.AgentID(cursor)
		if err := batchEach(br, func(sc codec.Scanner) error {
			a, err := codec.ScanAgent(s.reg, sc)
			snap.Agents = append(snap.Agents, a)
			return err
		}); err != nil {
			return err
		}
		if err := batchEach(br, func(sc codec.Scanner) error {
			sess, err := codec.ScanSession(s.reg, sc)
			snap.Pending = append(snap.Pending, framework.PendingSession{Session: sess})
			return err
		}); err != nil {
			return err
		}
		var kernels []domain.Kernel
		if err := batchEach(br, func(sc codec.Scanner) error {
			k, err := codec.ScanKernel(s.reg, sc)
			kernels = append(kernels, k)
			return err
		}); err != nil {
			return err
		}
		codec.GroupKernels(snap.Pending, kernels)
		var edges []codec.DependencyRow
		if err := batchEach(br, func(sc codec.Scanner) error {
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
		if err := batchEach(br, func(sc codec.Scanner) error {
			var r codec.UsageSlotRow
			err := sc.Scan(&r.User, &r.Project, &r.Domain, &r.InGroup, &r.Slot, &r.Sum)
			slots = append(slots, r)
			return err
		}); err != nil {
			return err
		}
		var counts []codec.UsageCountRow
		if err := batchEach(br, func(sc codec.Scanner) error {
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
		if err := batchEach(br, func(sc codec.Scanner) error {
			p, err := codec.ScanPolicy(s.reg, sc)
			policies = append(policies, p)
			return err
		}); err != nil {
			return err
		}
		snap.Policies = codec.BuildPolicies(policies)
		return br.Close()
	})
	if err != nil {
		return framework.Snapshot{}, err
	}
	return snap, nil
}

// batchEach reads the next result of a batch row by row.
func batchEach(br pgx.BatchResults, fn func(codec.Scanner) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	return each(rows, fn)
}
