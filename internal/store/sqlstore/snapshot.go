package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// LoadSnapshot reads one group's scheduling input from one snapshot of the
// database: ten queries in one batch, so one round trip on PostgreSQL
// whatever the number of sessions.
func (s *Store) LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error) {
	var snap framework.Snapshot
	err := s.read(ctx, "load snapshot of group "+group, func(tx txn) error {
		snap = framework.Snapshot{Now: now, Slots: s.reg}
		var (
			groupFound bool
			kernels    []domain.Kernel
			edges      []codec.DependencyRow
			slots      []codec.UsageSlotRow
			counts     []codec.UsageCountRow
			policies   []domain.Policy
		)
		err := tx.batch(ctx,
			Stmt{SQL: selectGroup, Args: []any{group}, Row: func(sc codec.Scanner) error {
				var err error
				groupFound = true
				snap.Group, err = codec.ScanGroup(s.reg, sc)
				return err
			}},
			Stmt{SQL: selectGroupCursor, Args: []any{group}, Row: func(sc codec.Scanner) error {
				var cursor string
				err := sc.Scan(&cursor)
				snap.Cursor = domain.AgentID(cursor)
				return err
			}},
			Stmt{SQL: selectGroupAgents, Args: []any{group}, Row: func(sc codec.Scanner) error {
				a, err := s.agents.Scan(sc)
				snap.Agents = append(snap.Agents, a)
				return err
			}},
			groupJobsStmt(group, &snap),
			Stmt{SQL: selectPendingOfGroup, Args: []any{group}, Row: func(sc codec.Scanner) error {
				sess, err := codec.ScanSession(s.reg, sc)
				snap.Pending = append(snap.Pending, framework.PendingSession{Session: sess})
				return err
			}},
			Stmt{SQL: selectPendingKernels, Args: []any{group}, Row: func(sc codec.Scanner) error {
				k, err := codec.ScanKernel(s.reg, sc)
				kernels = append(kernels, k)
				return err
			}},
			Stmt{SQL: selectPendingDependencies, Args: []any{group}, Row: func(sc codec.Scanner) error {
				var d codec.DependencyRow
				err := sc.Scan(&d.Session, &d.DependsOn, &d.Status, &d.Outcome)
				edges = append(edges, d)
				return err
			}},
			Stmt{SQL: selectUsageSlots, Args: []any{group}, Row: func(sc codec.Scanner) error {
				var r codec.UsageSlotRow
				err := sc.Scan(&r.User, &r.Project, &r.Domain, &r.InGroup, &r.Slot, &r.Sum)
				slots = append(slots, r)
				return err
			}},
			Stmt{SQL: selectUsageCounts, Row: func(sc codec.Scanner) error {
				var r codec.UsageCountRow
				err := sc.Scan(&r.User, &r.Project, &r.Domain, &r.Count)
				counts = append(counts, r)
				return err
			}},
			Stmt{SQL: selectPendingPolicies, Args: []any{group}, Row: func(sc codec.Scanner) error {
				p, err := codec.ScanPolicy(s.reg, sc)
				policies = append(policies, p)
				return err
			}},
			Stmt{SQL: selectGroupHeldDevices, Args: []any{group}, Row: func(sc codec.Scanner) error {
				return scanHeldDevices(sc, &snap.DeviceHeld)
			}},
			Stmt{SQL: selectGroupHoldings, Args: []any{group}, Row: func(sc codec.Scanner) error {
				h, err := codec.ScanHolding(s.reg, sc, now)
				snap.Holdings = append(snap.Holdings, h)
				return err
			}},
		)
		if err != nil {
			return err
		}
		if !groupFound {
			return fmt.Errorf("resource group %q: %w", group, store.ErrNotFound)
		}
		if p := snap.Group.Preemption; p.Enabled && p.Window > 0 {
			// A second round trip, for preempting groups only: the window
			// is the group's, known only now.
			if snap.Preemptions, err = s.preemptionsSince(ctx, tx, group, now.Add(-p.Window)); err != nil {
				return err
			}
		}
		codec.GroupKernels(snap.Pending, kernels)
		if snap.Dependencies, err = codec.AttachDependencies(snap.Pending, edges); err != nil {
			return err
		}
		if snap.Usage, err = codec.BuildUsage(s.reg, slots, counts); err != nil {
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

// scanHeldDevices adds one kernel's grants to what each device of its
// agent has held.
func scanHeldDevices(sc codec.Scanner, held *map[domain.AgentID]map[string]domain.Quantity) error {
	var agent, devices string
	if err := sc.Scan(&agent, &devices); err != nil {
		return err
	}
	var grants []domain.DeviceGrant
	if err := codec.DecodeDevices("kernels", agent, devices, &grants); err != nil {
		return err
	}
	if *held == nil {
		*held = map[domain.AgentID]map[string]domain.Quantity{}
	}
	m := (*held)[domain.AgentID(agent)]
	if m == nil {
		m = map[string]domain.Quantity{}
		(*held)[domain.AgentID(agent)] = m
	}
	for _, g := range grants {
		m[g.Device] += g.Share
	}
	return nil
}
