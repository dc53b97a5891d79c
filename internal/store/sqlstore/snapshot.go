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
// database. The group's own part (configuration, queue, jobs, policies) is
// read afresh, in one batch; the cluster's part (agents, the kernels that
// hold slots, the sessions that count toward quotas) comes from the
// snapshot cache, brought up to date from the change feed in the same
// read transaction (snapcache.go).
func (s *Store) LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error) {
	c := s.cache
	// One load at a time, each in its own read transaction begun under
	// the lock: the cache then only ever moves forward, and what it adds
	// to a snapshot is read at the same instant as the rest.
	c.mu.Lock()
	defer c.mu.Unlock()
	var snap framework.Snapshot
	err := s.read(ctx, "load snapshot of group "+group, func(tx txn) error {
		var holds bool
		var cut usageCut
		decayed := func(ctx context.Context, tx txn, group string, now time.Time, halfLife time.Duration) ([]framework.DecayedUsage, error) {
			return c.decay.read(ctx, s, tx, group, now, halfLife, cut)
		}
		var err error
		// The watermark is read for every group, in the batch's one
		// round trip, though only a fairshare group's load uses it.
		snap, err = s.loadQueue(ctx, tx, group, now, decayed,
			Stmt{SQL: selectGroupHolds, Args: []any{group}, Row: func(sc codec.Scanner) error { return sc.Scan(&holds) }},
			Stmt{SQL: selectUsageCut, Row: func(sc codec.Scanner) error { return sc.Scan(&cut.rolled, &cut.gen) }})
		if err != nil {
			return err
		}
		if err := c.refresh(ctx, s, tx); err != nil {
			return err
		}
		c.fill(&snap, group, holds, now)
		return nil
	})
	if err != nil {
		return framework.Snapshot{}, err
	}
	return snap, nil
}

// LoadSnapshotUncached is LoadSnapshot reading everything from the tables,
// as it did before the cache: the tests hold the cache to it.
func (s *Store) LoadSnapshotUncached(ctx context.Context, group string, now time.Time) (framework.Snapshot, error) {
	var snap framework.Snapshot
	err := s.read(ctx, "load snapshot of group "+group, func(tx txn) error {
		var (
			slots  []codec.UsageSlotRow
			counts []codec.UsageCountRow
		)
		// The cluster's part writes into snap, loadQueue's into q; both
		// run in one batch, one round trip on PostgreSQL.
		cluster := []Stmt{
			Stmt{SQL: selectGroupAgents, Args: []any{group}, Row: func(sc codec.Scanner) error {
				a, err := s.agents.Scan(sc)
				snap.Agents = append(snap.Agents, a)
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
			Stmt{SQL: selectGroupHeldDevices, Args: []any{group}, Row: func(sc codec.Scanner) error {
				return scanHeldDevices(sc, &snap.DeviceHeld)
			}},
			Stmt{SQL: selectGroupHoldings, Args: []any{group}, Row: func(sc codec.Scanner) error {
				h, err := codec.ScanHolding(s.reg, sc, now)
				snap.Holdings = append(snap.Holdings, h)
				return err
			}},
		}
		q, err := s.loadQueue(ctx, tx, group, now, s.decayedUsage, cluster...)
		if err != nil {
			return err
		}
		q.Agents, q.DeviceHeld, q.Holdings = snap.Agents, snap.DeviceHeld, snap.Holdings
		if q.Usage, err = codec.BuildUsage(s.reg, slots, counts); err != nil {
			return err
		}
		snap = q
		return nil
	})
	if err != nil {
		return framework.Snapshot{}, err
	}
	return snap, nil
}

// decayedFn reads a fairshare group's decayed usage history in tx.
type decayedFn func(ctx context.Context, tx txn, group string, now time.Time, halfLife time.Duration) ([]framework.DecayedUsage, error)

// loadQueue reads what a round needs of the group itself: its
// configuration and cursor, its queue with the queue's kernels,
// dependencies, jobs and policies, its recent preemptions and, for a
// fairshare group, its usage history through decayed. extra run in the
// same batch.
func (s *Store) loadQueue(ctx context.Context, tx txn, group string, now time.Time, decayed decayedFn,
	extra ...Stmt) (framework.Snapshot, error) {
	snap := framework.Snapshot{Now: now, Slots: s.reg}
	var (
		groupFound bool
		kernels    []domain.Kernel
		edges      []codec.DependencyRow
		policies   []domain.Policy
	)
	stmts := append([]Stmt{
		{SQL: selectGroup, Args: []any{group}, Row: func(sc codec.Scanner) error {
			var err error
			groupFound = true
			snap.Group, err = codec.ScanGroup(s.reg, sc)
			return err
		}},
		{SQL: selectGroupCursor, Args: []any{group}, Row: func(sc codec.Scanner) error {
			var cursor string
			err := sc.Scan(&cursor)
			snap.Cursor = domain.AgentID(cursor)
			return err
		}},
		groupJobsStmt(group, &snap),
		groupArraysStmt(group, &snap),
		{SQL: selectPendingOfGroup, Args: []any{group}, Row: func(sc codec.Scanner) error {
			sess, err := codec.ScanSession(s.reg, sc)
			snap.Pending = append(snap.Pending, framework.PendingSession{Session: sess})
			return err
		}},
		{SQL: selectPendingKernels, Args: []any{group}, Row: func(sc codec.Scanner) error {
			k, err := codec.ScanKernel(s.reg, sc)
			kernels = append(kernels, k)
			return err
		}},
		{SQL: selectPendingDependencies, Args: []any{group}, Row: func(sc codec.Scanner) error {
			var d codec.DependencyRow
			err := sc.Scan(&d.Session, &d.DependsOn, &d.Status, &d.Outcome)
			edges = append(edges, d)
			return err
		}},
		{SQL: selectPendingPolicies, Args: []any{group}, Row: func(sc codec.Scanner) error {
			p, err := codec.ScanPolicy(s.reg, sc)
			policies = append(policies, p)
			return err
		}},
	}, extra...)
	if err := tx.batch(ctx, stmts...); err != nil {
		return snap, err
	}
	if !groupFound {
		return snap, fmt.Errorf("resource group %q: %w", group, store.ErrNotFound)
	}
	var err error
	if p := snap.Group.Preemption; p.Enabled && p.Window > 0 {
		// A second round trip, for preempting groups only: the window
		// is the group's, known only now.
		if snap.Preemptions, err = s.preemptionsSince(ctx, tx, group, now.Add(-p.Window)); err != nil {
			return snap, err
		}
	}
	if snap.Group.Sequencer == domain.FairShareSequencer {
		// As for preemptions, a second round trip for these groups only.
		if snap.Decayed, err = decayed(ctx, tx, group, now, snap.Group.FairShare.EffectiveHalfLife()); err != nil {
			return snap, err
		}
	}
	codec.GroupKernels(snap.Pending, kernels)
	if snap.Dependencies, err = codec.AttachDependencies(snap.Pending, edges); err != nil {
		return snap, err
	}
	snap.Policies = codec.BuildPolicies(policies)
	return snap, nil
}

// scanGrants reads one kernel's row of held devices: its agent and its
// device grants.
func scanGrants(sc codec.Scanner) (domain.AgentID, []domain.DeviceGrant, error) {
	var agent, devices string
	if err := sc.Scan(&agent, &devices); err != nil {
		return "", nil, err
	}
	var grants []domain.DeviceGrant
	err := codec.DecodeDevices("kernels", agent, devices, &grants)
	return domain.AgentID(agent), grants, err
}

// addGrants adds grants to what each device has held.
func addGrants(held map[string]domain.Quantity, grants []domain.DeviceGrant) map[string]domain.Quantity {
	if held == nil {
		held = map[string]domain.Quantity{}
	}
	for _, g := range grants {
		held[g.Device] += g.Share
	}
	return held
}

// scanHeldDevices adds one kernel's grants to what each device of its
// agent has held.
func scanHeldDevices(sc codec.Scanner, held *map[domain.AgentID]map[string]domain.Quantity) error {
	agent, grants, err := scanGrants(sc)
	if err != nil {
		return err
	}
	if *held == nil {
		*held = map[domain.AgentID]map[string]domain.Quantity{}
	}
	(*held)[agent] = addGrants((*held)[agent], grants)
	return nil
}
